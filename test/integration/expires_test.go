package integration

import (
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// expiresPolicy is an EXPIRES condition, at params.at when at is set, else
// by the target's annotation.
func expiresPolicy(name, at string, action map[string]any) map[string]any {
	c := map[string]any{"type": policy.ConditionExpires}
	if at != "" {
		c["params"] = map[string]any{"at": at}
	}
	return map[string]any{"name": name, "condition": c, "action": action}
}

// annotateExpiry sets namespace ns's expiry annotation.
func annotateExpiry(t *testing.T, ns, value string) {
	t.Helper()
	patch := `{"metadata":{"annotations":{"` + policy.ExpiresAnnotation + `":"` + value + `"}}}`
	if _, err := shared.Admin.CoreV1().Namespaces().Patch(t.Context(), ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestExpires: an EXPIRES condition holds once params.at, else the
// target's annotation, has passed; a date is the end of that day in UTC
// (the due time, which a dry run --at honours); an annotation that does
// not parse is reported, with one Warning Event, and never expires; once
// mended, it does.
func TestExpires(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	caseID := home
	args := []string{"-l", caseLabel + "=" + caseID, "--trusted-namespaces", home}

	dated, past, misdated := shared.Namespace(t), shared.Namespace(t), shared.Namespace(t)
	annotateExpiry(t, dated, "2099-01-01")
	annotateExpiry(t, misdated, "next friday")
	createManager(t, managerObj(home, "dated", caseID, []any{expiresPolicy("expire", "", deleteAction)}, targeting(dated)))
	createManager(t, managerObj(home, "past", caseID, []any{expiresPolicy("expire", time.Now().Add(-time.Minute).UTC().Format(time.RFC3339), deleteAction)}, targeting(past)))
	createManager(t, managerObj(home, "misdated", caseID, []any{expiresPolicy("expire", "", deleteAction)}, targeting(misdated)))

	res := e.Sweep(t, args...)
	wantCode(t, res, 0)
	wantState(t, res, home, "past", report.StateFired)
	d := wantState(t, res, home, "dated", report.StateWaiting)
	if want := time.Date(2099, 1, 2, 0, 0, 0, 0, time.UTC); d.Due == nil || !d.Due.Equal(want) || !strings.Contains(d.Message, "expires at 2099-01-02T00:00:00Z (annotation") {
		t.Errorf("dated: due %v, %q; want due at the end of 2099-01-01 UTC", d.Due, d.Message)
	}
	m := wantState(t, res, home, "misdated", report.StateWaiting)
	if !strings.Contains(m.AnnotationIgnored, `"next friday" is neither an RFC 3339 time`) {
		t.Errorf("misdated: annotationIgnored %q, want the annotation named as not parsing", m.AnnotationIgnored)
	}
	if st := managerStatus(t, home, "misdated"); st.IgnoredAnnotation != m.AnnotationIgnored {
		t.Errorf("misdated's status says ignoredAnnotation %q, want %q", st.IgnoredAnnotation, m.AnnotationIgnored)
	}
	warnings := func() int {
		list, err := shared.Admin.EventsV1().Events(home).List(t.Context(), metav1.ListOptions{FieldSelector: "reason=AnnotationIgnored,regarding.name=misdated"})
		if err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}
	if n := warnings(); n != 1 {
		t.Errorf("%d AnnotationIgnored Events, want 1", n)
	}

	// A dry run at the due time plans the DELETE.
	plan := e.Sweep(t, append(args, "--dry-run", "--at", "2099-01-02T00:00:00Z")...)
	wantState(t, plan, home, "dated", report.StatePlanned)

	// Again: the same annotation tells nothing new.
	res = e.Sweep(t, args...)
	wantState(t, res, home, "misdated", report.StateWaiting)
	if n := warnings(); n != 1 {
		t.Errorf("%d AnnotationIgnored Events after a second sweep, want still 1", n)
	}
	// Mended, and past: it expires, and says no more that it is ignored.
	annotateExpiry(t, misdated, "2020-02-29")
	res = e.Sweep(t, args...)
	if got := wantState(t, res, home, "misdated", report.StateFired); !strings.Contains(got.Message, "expired at 2020-03-01T00:00:00Z") || got.AnnotationIgnored != "" {
		t.Errorf("misdated, mended: %+v; want it expired at the end of 2020-02-29", got)
	}
}

// A namespace whose expiry annotation changes between the sweep's listing
// and its DELETE (CI pushing it back) is read again and left alone: the
// DELETE, preconditioned on the version listed, is refused, and the
// changed expiry leaves the decision to the next sweep.
func TestExpiryChangedBeforeTheDelete(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	target := shared.Namespace(t)
	annotateExpiry(t, target, "2020-01-01")
	createManager(t, managerObj(home, "expiring", home, []any{expiresPolicy("expire", "", deleteAction)}, targeting(target)))
	kubeconfig := e.KubeconfigThrough(t, func(rp *httputil.ReverseProxy) http.Handler {
		var once sync.Once
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if isDelete(r, target) {
				once.Do(func() { annotateExpiry(t, target, "2099-01-01") })
			}
			rp.ServeHTTP(w, r)
		})
	})
	res := e.Sweep(t, "--kubeconfig", kubeconfig, "-l", caseLabel+"="+home, "--trusted-namespaces", home)
	wantState(t, res, home, "expiring", report.StateBusy)
	if e.NamespaceGoneOrTerminating(t, target) {
		t.Fatal("the namespace was deleted though its expiry was pushed back before the DELETE")
	}
	res = e.Sweep(t, "-l", caseLabel+"="+home, "--trusted-namespaces", home)
	wantState(t, res, home, "expiring", report.StateWaiting)
}
