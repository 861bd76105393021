package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// setNamespaceAnnotation sets annotation key of namespace ns to value.
func setNamespaceAnnotation(t *testing.T, ns, key, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value)
	if _, err := shared.Admin.CoreV1().Namespaces().Patch(t.Context(), ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A namespace recreated with the touched annotation of the one before it
// (a manifest applied again) waits a whole idle period from its creation:
// a touch older than the creation is no activity of this namespace.
func TestIdleTouchOlderThanCreation(t *testing.T) {
	e := setup(t)
	ns := shared.Namespace(t)
	created := createdAt(t, ns)
	setNamespaceAnnotation(t, ns, policy.TouchedAnnotation, created.Add(-365*24*time.Hour).Format(time.RFC3339))
	createManager(t, managerObj(ns, ns, ns, []any{idlePolicy("idle a minute", 60, deleteAction)}))

	res := e.Sweep(t, "-l", caseLabel+"="+ns, "--dry-run", "--at", created.Add(30*time.Second).Format(time.RFC3339))
	wantCode(t, res, 0)
	got := wantState(t, res, ns, ns, report.StateWaiting)
	wantActivity(t, ns, got.LastActivity, created, policy.ActivityCreated)
	if got.Due == nil || !got.Due.Equal(created.Add(time.Minute)) {
		t.Errorf("due %v, want a minute after the creation, %s", got.Due, created.Add(time.Minute).UTC().Format(time.RFC3339))
	}
}

// IDLE under a hold: a namespace idle long enough is not acted on while it
// is held, by its manager or by a rule, and is once the hold has passed
// (a dry run at that time); a namespace beside it, not held, goes at once.
func TestIdleUnderAHold(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	caseID := home
	managed := shared.Namespace(t)
	createManager(t, managerObj(managed, managed, caseID, []any{idlePolicy("idle a second", 1, deleteAction)}))
	ruled := labelled(t, home, 2)
	held, free := ruled[0], ruled[1]
	createManager(t, managerObj(home, "idle", caseID, []any{idlePolicy("idle a second", 1, deleteAction)}, selecting(home)))
	waitPast(lastCreated(t, []string{managed, held, free}))
	until := time.Now().Add(time.Hour).Truncate(time.Second).UTC()
	for _, ns := range []string{managed, held} {
		setNamespaceAnnotation(t, ns, status.HoldAnnotation, until.Format(time.RFC3339))
	}
	args := []string{"-l", caseLabel + "=" + caseID, "--trusted-namespaces", home}

	res := e.Sweep(t, args...)
	wantCode(t, res, 0)
	got := wantState(t, res, managed, managed, report.StateWaiting)
	if got.HeldUntil == nil || !got.HeldUntil.Equal(until) {
		t.Errorf("manager: held until %v, want %s", got.HeldUntil, until.Format(time.RFC3339))
	}
	if p := res.Pair(t, home, "idle", held); p.State != report.StateWaiting || p.HeldUntil == nil || !p.HeldUntil.Equal(until) {
		t.Errorf("rule on the held namespace %s: %s (%s) held until %v, want waiting until %s", held, p.State, p.Message, p.HeldUntil, until.Format(time.RFC3339))
	}
	if p := res.Pair(t, home, "idle", free); p.State != report.StateFired {
		t.Errorf("rule on %s, not held: %s (%s), want fired", free, p.State, p.Message)
	}
	for _, ns := range []string{managed, held} {
		if e.NamespaceGoneOrTerminating(t, ns) {
			t.Errorf("namespace %s deleted while it was held", ns)
		}
	}
	if !e.NamespaceGoneOrTerminating(t, free) {
		t.Errorf("namespace %s, not held, not deleted", free)
	}

	res = e.Sweep(t, append(args, "--dry-run", "--at", until.Add(time.Second).Format(time.RFC3339))...)
	wantCode(t, res, 0)
	if got := wantState(t, res, managed, managed, report.StatePlanned); got.HeldUntil != nil {
		t.Errorf("manager after the hold: held until %v, want no hold", got.HeldUntil)
	}
	if p := res.Pair(t, home, "idle", held); p.State != report.StatePlanned || p.HeldUntil != nil {
		t.Errorf("rule on %s after the hold: %s (%s) held until %v, want planned", held, p.State, p.Message, p.HeldUntil)
	}
}

// namespaceOfPath is the namespace of a request for objects in one
// (/api/v1/namespaces/NS/pods, /apis/apps/v1/namespaces/NS/replicasets),
// else "".
func namespaceOfPath(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i+2 < len(parts); i++ {
		if parts[i] == "namespaces" {
			return parts[i+1]
		}
	}
	return ""
}
