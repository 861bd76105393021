package cmd

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nsman/nsman/explain"
)

// TestWriteExplain: the text report lists what holds the namespace, then
// numbered steps, each command with its warning; a namespace not being
// deleted is said to be so.
func TestWriteExplain(t *testing.T) {
	var out bytes.Buffer
	if err := explain.WriteText(&out, explain.Report{Namespace: "a", Phase: "Active"}, false); err != nil || out.String() != "namespace a is Active: it is not being deleted\n" {
		t.Errorf("active: %v %q", err, out.String())
	}
	out.Reset()
	at := metav1.NewTime(time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC))
	r := explain.Report{
		Namespace: "e2e-1", Phase: "Terminating", DeletionTimestamp: &at,
		Conditions: []corev1.NamespaceCondition{{Type: corev1.NamespaceFinalizersRemaining, Status: corev1.ConditionTrue, Reason: "SomeFinalizersRemain", Message: "Some content in the namespace has finalizers remaining"}},
		Finalizers: []string{"kubernetes"},
		Remaining:  []explain.Resource{{Resource: "widgets.example.com", Count: 2, Finalized: []explain.Object{{Name: "w1", Finalizers: []string{"example.com/hold"}}}}},
		Unblock:    []explain.Step{{Holds: "1 widgets.example.com hold the finalizer example.com/hold (w1)", Unblock: "its controller removes it", Commands: []string{"kubectl -n e2e-1 patch ... -- widgets.example.com w1", "printf ..."}, Warning: "skips the cleanup"}},
	}
	if err := explain.WriteText(&out, r, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"namespace e2e-1: Terminating since 2026-11-24T09:00:00Z\n",
		"  NamespaceFinalizersRemaining=True SomeFinalizersRemain: Some content",
		"the namespace's own finalizers: kubernetes\n",
		"  widgets.example.com: 2, 1 with finalizers\n    w1: example.com/hold\n",
		"to unblock it:\n  1. 1 widgets.example.com hold the finalizer example.com/hold (w1)\n     its controller removes it\n     a person could run (nsman does not):\n       kubectl -n e2e-1 patch ... -- widgets.example.com w1\n       printf ...\n     warning: skips the cleanup\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// TestWriteExplainEscapes: no control or formatting character of what the
// cluster said (a Role may be named with terminal escapes and newlines)
// reaches the terminal in the text report: each is shown escaped, the
// rest of the name as it is.
func TestWriteExplainEscapes(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC))
	hostile := "r\x1b]0;pwned\x07\nfake line\u202e\u009b\xff$(x)`y`'z\\"
	r := explain.Report{
		Namespace: "e2e-1", Phase: "Terminating", DeletionTimestamp: &at,
		Conditions: []corev1.NamespaceCondition{{Type: corev1.NamespaceFinalizersRemaining, Status: corev1.ConditionTrue, Reason: "SomeFinalizersRemain", Message: "held by " + hostile}},
		Remaining:  []explain.Resource{{Resource: "roles.rbac.authorization.k8s.io", Count: 1, Finalized: []explain.Object{{Name: hostile, Finalizers: []string{"example.com/hold"}}}}},
		Unlisted:   []explain.Unlisted{{What: "widgets", Error: "no " + hostile}},
		Unblock:    []explain.Step{{Holds: "1 roles hold (" + hostile + ")", Unblock: "its controller", Commands: []string{"printf '%s\\n' '{}' | kubectl patch -f -"}, Warning: "w"}},
	}
	var out bytes.Buffer
	if err := explain.WriteText(&out, r, false); err != nil {
		t.Fatal(err)
	}
	const shown = `r\x1b]0;pwned\x07\x0afake line\u202e\x9b\xff$(x)` + "`y`'z\\"
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		for _, c := range line {
			if unicode.IsControl(c) || unicode.Is(unicode.Cf, c) || c == utf8.RuneError {
				t.Errorf("line %q holds %U", line, c)
			}
		}
	}
	if got := strings.Count(out.String(), shown); got != 4 {
		t.Errorf("the name shown escaped as %s %d times, want 4 (object, condition, step, not read):\n%s", shown, got, out.String())
	}
	if !strings.Contains(out.String(), "       printf '%s\\n' '{}' | kubectl patch -f -\n") {
		t.Errorf("the command not printed as it is:\n%s", out.String())
	}
}

// TestWriteExplainOwner: an Active namespace's report says, besides that
// it is not being deleted, who owns it, that it came back after a rule
// deleted it, and with an owner that exists what deletes it for good; a
// tenant's marker and names print escaped.
func TestWriteExplainOwner(t *testing.T) {
	made := metav1.NewTime(time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC))
	deleted := made.Add(-10 * time.Minute)
	r := explain.Report{Namespace: "pr-12", Phase: "Active", Created: made,
		Owner:    &explain.Owner{Ref: "applications.argoproj.io/argocd/pr-12", By: "argocd.argoproj.io/tracking-id", Presence: explain.OwnerExists},
		CameBack: []explain.CameBack{{Rule: "team/previews", Policy: "ttl", Action: "DELETE", Deleted: deleted}},
		Unlisted: []explain.Unlisted{{What: "applications.argoproj.io in argocd", Error: "forbidden"}},
	}
	var out bytes.Buffer
	if err := explain.WriteText(&out, r, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"namespace pr-12 is Active: it is not being deleted\n",
		"owner: applications.argoproj.io/argocd/pr-12 (by argocd.argoproj.io/tracking-id): exists\n",
		"came back: made again at 2026-11-24T09:00:00Z after rule team/previews deleted it at 2026-11-24T08:50:00Z (policy ttl)\n",
		"its owner applications.argoproj.io/argocd/pr-12 exists and may have made it again: a DELETE with params: {via: owner}",
		"OWNER_GONE",
		"not read:\n  applications.argoproj.io in argocd: forbidden\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	r.Owner = &explain.Owner{Ref: "applications.argoproj.io/argocd/pr-12", By: "argocd.argoproj.io/tracking-id", Presence: explain.OwnerGone}
	if err := explain.WriteText(&out, r, false); err != nil || strings.Contains(out.String(), "may have made it again") || !strings.Contains(out.String(), "): gone\n") {
		t.Errorf("an owner gone: %v\n%s", err, out.String())
	}

	out.Reset()
	hostile := "x\x1b]0;pwned\x07\nfake"
	r.Owner = &explain.Owner{By: "argocd.argoproj.io/tracking-id", Presence: explain.OwnerUnknown, Why: "tracking id " + hostile + " does not parse"}
	r.CameBack[0].Policy = hostile
	if err := explain.WriteText(&out, r, false); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out.String(), `x\x1b]0;pwned\x07\x0afake`); got != 2 || !strings.Contains(out.String(), "owner: argocd.argoproj.io/tracking-id names none: ") {
		t.Errorf("the marker shown escaped %d times, want 2 (owner, came back):\n%s", got, out.String())
	}
}

// TestExplainUsageErrors: explain exits 2, saying why, without a
// namespace, with a bad -o, and when the cluster cannot be reached.
func TestExplainUsageErrors(t *testing.T) {
	unreachable := unreachableKubeconfig(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "accepts 1 arg(s)"},
		{[]string{"e2e-1", "-o", "table"}, `-o "table": want text, wide, json, yaml, name`},
		{[]string{"e2e-1"}, "the cluster cannot be reached"},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"explain", "--kubeconfig", unreachable}, tc.args...)
		if code := Execute(t.Context(), args, &stdout, &stderr); code != ExitUsage || !strings.Contains(stderr.String(), tc.want) || stdout.Len() > 0 {
			t.Errorf("nsman %q: exit %d, stderr %q, stdout %q; want exit %d saying %q and no report", args, code, stderr.String(), stdout.String(), ExitUsage, tc.want)
		}
	}
}
