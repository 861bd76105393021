package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/cmd"
	"github.com/nsman/nsman/due"
	"github.com/nsman/nsman/internal/status"
)

// TestDue: nsman due lists what acts within --within, soonest due first:
// managers due in 1h and 3h, one due in 2h held for 5h, a rule's namespace
// due in 2h30m, one due in 4h whose window is closed then (it acts when the
// window opens), not one due in 30h; a freeze at a due time puts that one
// off. It reads as a dry run
// does: nsman's ServiceAccount writes nothing.
func TestDue(t *testing.T) {
	e := setup(t)
	soon, held, three, windowed, later := shared.Namespace(t), shared.Namespace(t), shared.Namespace(t), shared.Namespace(t), shared.Namespace(t)
	caseID := soon
	home, ruled := shared.Namespace(t), labelled(t, soon, 1)[0]
	createManager(t, managerObj(home, "sweeper", caseID, []any{ttlPolicy("expire", 150*60, deleteAction)}, selecting(caseID)))
	now := time.Now().UTC()
	opens := now.Add(6 * time.Hour).Truncate(time.Hour)
	window := map[string]any{"from": opens.Format("15:04"), "to": opens.Add(2 * time.Hour).Format("15:04")}
	for ns, p := range map[string]map[string]any{
		soon:     ttlPolicy("expire", 3600, deleteAction),
		held:     ttlPolicy("expire", 2*3600, deleteAction),
		three:    ttlPolicy("expire", 3*3600, deleteAction),
		windowed: ttlPolicy("expire", 4*3600, deleteAction),
		later:    ttlPolicy("expire", 30*3600, deleteAction),
	} {
		if ns == windowed {
			p["windows"] = []any{window}
		}
		createManager(t, managerObj(ns, ns, caseID, []any{p}))
	}
	holdUntil := now.Add(5 * time.Hour).Truncate(time.Second)
	patch := []byte(`{"metadata":{"annotations":{"` + status.HoldAnnotation + `":"` + holdUntil.Format(time.RFC3339) + `"}}}`)
	if _, err := shared.Admin.CoreV1().Namespaces().Patch(t.Context(), held, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	before := len(e.Writes(t))
	// A trusted namespace that does not exist is warned of once, by the
	// first dry run, not by each.
	l, stderr := runDue(t, e.Kubeconfig, "--within", "24h", "-A", "-l", caseLabel+"="+caseID, "--trusted-namespaces", home+",nsman-due-missing")
	if n := strings.Count(stderr, "a trusted namespace does not exist"); n != 1 {
		t.Errorf("warned %d times of the missing trusted namespace, want once:\n%s", n, stderr)
	}
	if writes := e.Writes(t)[before:]; len(writes) > 0 {
		t.Fatalf("nsman due wrote:\n%v", writes)
	}
	t.Logf("nsman due: %+v", l.Items)
	var names []string
	for _, it := range l.Items {
		names = append(names, it.Name)
	}
	if got, want := strings.Join(names, " "), strings.Join([]string{soon, held, "sweeper", three, windowed}, " "); got != want {
		t.Fatalf("nsman due lists %s, want %s", got, want)
	}
	byName := map[string]due.Item{}
	for _, it := range l.Items {
		byName[it.Name] = it
		if it.Policy != "expire" || it.Action != "DELETE" || it.ActsAt == nil {
			t.Errorf("%s: policy %q, action %q, acts at %v; want expire, DELETE, a time", it.Name, it.Policy, it.Action, it.ActsAt)
		}
	}
	if it := byName["sweeper"]; !it.Rule || it.Namespace != home || it.Target != ruled {
		t.Errorf("the rule's namespace: %+v, want rule %s/sweeper on %s", it, home, ruled)
	}
	for _, ns := range []string{soon, three, "sweeper"} {
		if it := byName[ns]; len(it.DelayedBy) > 0 || it.ActsAt == nil || !it.ActsAt.Equal(it.Due) {
			t.Errorf("%s: %+v, want it acting when due", ns, it)
		}
	}
	if it := byName[held]; len(it.DelayedBy) != 1 || it.DelayedBy[0].By != due.ByHold || it.ActsAt == nil || !it.ActsAt.Equal(holdUntil) || !it.Due.Before(holdUntil) {
		t.Errorf("held: %+v, want due before the hold ends, acting at %s", it, holdUntil)
	}
	if it := byName[windowed]; len(it.DelayedBy) != 1 || it.DelayedBy[0].By != due.ByWindow || it.ActsAt == nil || !it.ActsAt.Equal(opens) {
		t.Errorf("windowed: %+v, want it acting when its window opens, %s", it, opens)
	}

	// A freeze at its due time puts the first off until the freeze ends.
	thaw := now.Add(2 * time.Hour).Truncate(time.Second)
	l, _ = runDue(t, e.Kubeconfig, "--within", "90m", "-l", caseLabel+"="+caseID, "--trusted-namespaces", home, "--freeze", now.Add(30*time.Minute).Format(time.RFC3339)+"/"+thaw.Format(time.RFC3339))
	if len(l.Items) != 1 || len(l.Items[0].DelayedBy) != 1 || l.Items[0].DelayedBy[0].By != due.ByFreeze || l.Items[0].ActsAt == nil || !l.Items[0].ActsAt.Equal(thaw) {
		t.Errorf("in a freeze: %+v, want %s acting when it ends, %s", l.Items, soon, thaw)
	}
	if writes := e.Writes(t)[before:]; len(writes) > 0 {
		t.Fatalf("nsman due wrote:\n%v", writes)
	}

	// Interrupted, it exits 1, as an interrupted sweep does.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var out bytes.Buffer
	if code := cmd.Execute(ctx, []string{"due", "--kubeconfig", e.Kubeconfig, "--config-from=none", "-l", caseLabel + "=" + caseID}, &out, &out); code != cmd.ExitFailed || !strings.Contains(out.String(), "interrupted") {
		t.Errorf("interrupted: exit %d, %s; want 1", code, out.String())
	}
}

// runDue runs nsman due -o json as the kubeconfig's user, its flags alone,
// and returns what it listed and its stderr.
func runDue(t *testing.T, kubeconfig string, args ...string) (due.List, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	all := append([]string{"due", "-o", "json", "--kubeconfig", kubeconfig, "--config-from=none"}, args...)
	if code := cmd.Execute(t.Context(), all, &stdout, &stderr); code != cmd.ExitOK {
		t.Fatalf("nsman %v: exit %d\n%s\nstderr:\n%s", all, code, stdout.String(), stderr.String())
	}
	var l due.List
	if err := json.Unmarshal(stdout.Bytes(), &l); err != nil {
		t.Fatalf("nsman %v: not JSON (%v):\n%s", all, err, stdout.String())
	}
	return l, stderr.String()
}
