package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// holdLeeway is how far beyond --max-hold a hold may end and still hold
// (internal/decide/holds.go).
const holdLeeway = 5 * time.Minute

// TestMaxHoldFromTheCommandLine: --max-hold travels from the command line
// into the sweep. Of two namespaces with a due DELETE, one held 1h59m
// ahead and one held 2h, the leeway and a minute ahead, both hold under the
// default --max-hold. Under --max-hold 2h the first still holds (waiting
// until its hold ends, nothing done) and the second's hold is ignored,
// said so, and the DELETE done.
func TestMaxHoldFromTheCommandLine(t *testing.T) {
	e := setup(t)
	inside, beyond := shared.Namespace(t), shared.Namespace(t)
	caseID := inside
	now := time.Now().UTC().Truncate(time.Second)
	holds := map[string]time.Time{
		inside: now.Add(2*time.Hour - time.Minute),
		beyond: now.Add(2*time.Hour + holdLeeway + time.Minute),
	}
	for ns, until := range holds {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, status.HoldAnnotation, until.Format(time.RFC3339))
		if _, err := shared.Admin.CoreV1().Namespaces().Patch(t.Context(), ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		createManager(t, managerObj(ns, ns, caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}))
	}
	held := func(res nsmantest.Result, ns string) {
		t.Helper()
		w := wantState(t, res, ns, ns, report.StateWaiting)
		until := holds[ns]
		if w.HeldUntil == nil || !w.HeldUntil.Equal(until) || w.Due == nil || !w.Due.Equal(until) || w.HoldIgnored != "" ||
			!strings.Contains(w.Message, "namespace "+ns+" is held until") {
			t.Errorf("%s: heldUntil %v, due %v, holdIgnored %q, message %q; want held until %v", ns, w.HeldUntil, w.Due, w.HoldIgnored, w.Message, until)
		}
		if e.NamespaceGoneOrTerminating(t, ns) || e.Deactivated(t, ns, ns) || managerStatus(t, ns, ns).LastAction != nil {
			t.Errorf("%s: acted on while held", ns)
		}
	}

	res := e.Sweep(t, "-l", caseLabel+"="+caseID)
	wantCode(t, res, 0)
	held(res, inside)
	held(res, beyond)

	res = e.Sweep(t, "-l", caseLabel+"="+caseID, "--max-hold", "2h")
	wantCode(t, res, 0)
	held(res, inside)
	f := wantState(t, res, beyond, beyond, report.StateFired)
	want := fmt.Sprintf("ends %s, more than --max-hold 2h ahead", holds[beyond].Format(time.RFC3339))
	if !strings.Contains(f.HoldIgnored, want) || f.HeldUntil != nil || f.Policy != "delete at once" {
		t.Errorf("%s: holdIgnored %q (want one saying %q), heldUntil %v, policy %q", beyond, f.HoldIgnored, want, f.HeldUntil, f.Policy)
	}
	if !e.NamespaceGoneOrTerminating(t, beyond) {
		t.Errorf("%s not deleted once its hold was ignored", beyond)
	}
}
