package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

func wantState(t *testing.T, res nsmantest.Result, ns, name string, want report.State) report.Entry {
	t.Helper()
	e := res.Entry(t, ns, name)
	if e.State != want {
		t.Fatalf("manager %s/%s: state %q (%s), want %q", ns, name, e.State, e.Message, want)
	}
	return e
}

func wantCode(t *testing.T, res nsmantest.Result, want int) {
	t.Helper()
	if res.Code != want {
		t.Fatalf("exit code %d, want %d; stderr:\n%s", res.Code, want, res.Stderr)
	}
}

func TestTTLDeletesOnceDueAndOnlyOnce(t *testing.T) {
	e := setup(t)
	due, notDue := shared.Namespace(t), shared.Namespace(t)
	caseID := due
	createManager(t, managerObj(due, due, caseID, []any{ttlPolicy("delete when old", 0, deleteAction)}))
	createManager(t, managerObj(notDue, notDue, caseID, []any{ttlPolicy("delete when old", 3600, deleteAction)}))

	res := e.Sweep(t, "-l", caseLabel+"="+caseID)
	wantCode(t, res, 0)
	fired := wantState(t, res, due, due, report.StateFired)
	if want := []string{"delete namespace " + due}; !slices.Equal(fired.Effects, want) {
		t.Errorf("effects %q, want %q", fired.Effects, want)
	}
	waiting := wantState(t, res, notDue, notDue, report.StateWaiting)
	ns, err := shared.Admin.CoreV1().Namespaces().Get(t.Context(), notDue, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := ns.CreationTimestamp.Add(time.Hour); waiting.Due == nil || !waiting.Due.Equal(want) {
		t.Errorf("due %v, want %v", waiting.Due, want)
	}
	if !e.NamespaceGoneOrTerminating(t, due) {
		t.Errorf("namespace %s not deleted", due)
	}
	if e.NamespaceGoneOrTerminating(t, notDue) {
		t.Errorf("namespace %s deleted before its TTL", notDue)
	}

	// Nothing changed since: the next sweep writes nothing.
	before := len(e.Writes(t))
	again := e.Sweep(t, "-l", caseLabel+"="+caseID)
	wantCode(t, again, 0)
	wantState(t, again, notDue, notDue, report.StateWaiting)
	if writes := e.Writes(t)[before:]; len(writes) > 0 {
		t.Fatalf("a sweep with nothing to do wrote:\n%v", writes)
	}
}

func TestPodsSucceed(t *testing.T) {
	setup(t)
	main := map[string]string{"component": "main"}
	other := map[string]string{"component": "auxiliary"}
	tests := []struct {
		name   string
		pods   map[string]corev1.PodPhase // name -> phase, labelled main unless prefixed "aux"
		params func(map[string]any)
		want   report.State
		detail string
	}{
		{name: "failed pod blocks", pods: map[string]corev1.PodPhase{"a": corev1.PodSucceeded, "b": corev1.PodFailed}, want: report.StateWaiting, detail: "pod b has not succeeded"},
		{name: "running pod blocks", pods: map[string]corev1.PodPhase{"a": corev1.PodRunning}, want: report.StateWaiting, detail: "pod a has not succeeded"},
		{name: "succeeded pods fire despite unmatched running pods", pods: map[string]corev1.PodPhase{"a": corev1.PodSucceeded, "b": corev1.PodSucceeded, "aux-c": corev1.PodRunning}, want: report.StateFired},
		{name: "no matching pod fires", pods: map[string]corev1.PodPhase{"aux-c": corev1.PodRunning}, want: report.StateFired},
		{name: "not before the initial delay", pods: map[string]corev1.PodPhase{"a": corev1.PodSucceeded}, params: func(p map[string]any) { p["initialDelaySeconds"] = int64(3600) }, want: report.StateWaiting, detail: "initial delay"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ns := shared.Namespace(t)
			for name, phase := range tt.pods {
				labels := main
				if strings.HasPrefix(name, "aux") {
					labels = other
				}
				podWithPhase(t, ns, name, labels, phase)
			}
			var params []func(map[string]any)
			if tt.params != nil {
				params = append(params, tt.params)
			}
			createManager(t, managerObj(ns, ns, ns, []any{podsPolicy("delete when tests pass", map[string]any{"component": "main"}, deleteAction, params...)}))
			res := env.Sweep(t, "-l", caseLabel+"="+ns)
			wantCode(t, res, 0)
			got := wantState(t, res, ns, ns, tt.want)
			if !strings.Contains(got.Message, tt.detail) {
				t.Errorf("message %q does not contain %q", got.Message, tt.detail)
			}
			if deleted := env.NamespaceGoneOrTerminating(t, ns); deleted != (tt.want == report.StateFired) {
				t.Errorf("namespace deleted = %v", deleted)
			}
		})
	}
}

func TestGuards(t *testing.T) {
	e := setup(t)
	home, other := shared.Namespace(t), shared.Namespace(t)
	caseID := home
	// Untrusted namespace, other target by spec.namespace and by name.
	createManager(t, managerObj(home, "by-spec", caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}, targeting(other)))
	createManager(t, managerObj(home, other, caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}))
	// Trusted namespace, protected target.
	createManager(t, managerObj(nsmantest.ServiceAccountNamespace, "protected-"+home, caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}, targeting("kube-public")))
	// Deactivated.
	createManager(t, managerObj(home, home, caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}, deactivated))
	t.Cleanup(func() {
		_ = e.Dynamic.Resource(cluster.ManagerResource).Namespace(nsmantest.ServiceAccountNamespace).Delete(context.Background(), "protected-"+home, metav1.DeleteOptions{})
	})
	rvBefore := e.Manager(t, home, home).GetResourceVersion()

	res := e.Sweep(t, "-l", caseLabel+"="+caseID)
	wantCode(t, res, 0)
	for _, name := range []string{"by-spec", other} {
		got := wantState(t, res, home, name, report.StateForbidden)
		if !strings.Contains(got.Message, "may only target "+home) {
			t.Errorf("%s: message %q does not explain the refusal", name, got.Message)
		}
	}
	if got := wantState(t, res, nsmantest.ServiceAccountNamespace, "protected-"+home, report.StateForbidden); !strings.Contains(got.Message, "protected") {
		t.Errorf("message %q does not say the target is protected", got.Message)
	}
	wantState(t, res, home, home, report.StateDeactivated)
	for _, ns := range []string{home, other, "kube-public"} {
		if e.NamespaceGoneOrTerminating(t, ns) {
			t.Errorf("namespace %s deleted", ns)
		}
	}
	if rv := e.Manager(t, home, home).GetResourceVersion(); rv != rvBefore {
		t.Errorf("deactivated manager written to (resourceVersion %s -> %s)", rvBefore, rv)
	}
}

func TestWebhookFailureIsRetriedWithTheSameKey(t *testing.T) {
	e := setup(t)
	ns := shared.Namespace(t)
	recv := nsmantest.NewReceiver(t)
	recv.SetStatus(http.StatusInternalServerError)
	policy := ttlPolicy("notify at once", 0, webhookAction(recv.ServiceURL(t, shared.Admin, ns, "sink")+"/hook"))
	createManager(t, managerObj(ns, ns, ns, []any{policy}))

	res := e.Sweep(t, "-l", caseLabel+"="+ns)
	wantCode(t, res, 1)
	wantState(t, res, ns, ns, report.StateFailed)
	if e.Deactivated(t, ns, ns) {
		t.Fatal("manager deactivated after a failed webhook")
	}
	failures := len(recv.Deliveries())
	if failures != 3 {
		t.Errorf("%d attempts against a failing receiver, want 3", failures)
	}
	if last := managerStatus(t, ns, ns).LastAction; last == nil || last.Result != report.ResultFailed || !strings.Contains(last.Message, "500") {
		t.Errorf("status.lastAction %+v, want a failure naming the 500", last)
	}

	recv.SetStatus(http.StatusOK)
	letBackoffPass(t, ns, ns)
	res = e.Sweep(t, "-l", caseLabel+"="+ns)
	wantCode(t, res, 0)
	wantState(t, res, ns, ns, report.StateFired)
	if !e.Deactivated(t, ns, ns) {
		t.Fatal("manager not deactivated after the webhook succeeded")
	}
	if st := managerStatus(t, ns, ns); st.LastAction == nil || st.LastAction.Result != report.ResultSucceeded ||
		st.LastAction.Policy != "notify at once" || st.Claim != nil || condition(st).Status != metav1.ConditionTrue || condition(st).Reason != "Fired" {
		t.Errorf("status %+v, want a succeeded lastAction of the policy, no claim and the Fired condition True", st)
	}
	res = e.Sweep(t, "-l", caseLabel+"="+ns)
	wantState(t, res, ns, ns, report.StateDeactivated)

	deliveries := recv.Deliveries()
	if len(deliveries) != failures+1 {
		t.Fatalf("%d deliveries, want %d", len(deliveries), failures+1)
	}
	key := deliveries[0].Header.Get("Idempotency-Key")
	for i, d := range deliveries {
		if got := d.Header.Get("Idempotency-Key"); key == "" || got != key {
			t.Errorf("delivery %d: Idempotency-Key %q, want %q", i, got, key)
		}
	}
	var body struct {
		NamespaceManager struct{ Namespace, Name string } `json:"namespaceManager"`
		Policy           map[string]any                   `json:"policy"`
		Namespace        string                           `json:"namespace"`
	}
	if err := json.Unmarshal(deliveries[len(deliveries)-1].Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.NamespaceManager.Namespace != ns || body.NamespaceManager.Name != ns || body.Namespace != ns || body.Policy["name"] != "notify at once" {
		t.Errorf("webhook body %s lacks the original fields", deliveries[len(deliveries)-1].Body)
	}
}

func TestMaxActionsDefersTheRest(t *testing.T) {
	e := setup(t)
	var namespaces []string
	for range 3 {
		namespaces = append(namespaces, shared.Namespace(t))
	}
	caseID := namespaces[0]
	for _, ns := range namespaces {
		createManager(t, managerObj(ns, ns, caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}))
	}
	res := e.Sweep(t, "-l", caseLabel+"="+caseID, "--max-actions", "1")
	wantCode(t, res, 0)
	if got := res.Report.Summary.States; got[report.StateFired] != 1 || got[report.StateDeferred] != 2 {
		t.Fatalf("states %v, want 1 fired and 2 deferred", got)
	}
	res = e.Sweep(t, "-l", caseLabel+"="+caseID)
	wantCode(t, res, 0)
	// The first manager went, or is going, with the namespace it deleted.
	if got := res.Report.Summary.States; got[report.StateFired] != 2 || got[report.StateFired]+got[report.StateTargetTerminating] != len(res.Report.Entries) {
		t.Fatalf("next sweep: states %v, want 2 fired, and the first manager gone or target-terminating", got)
	}
	for _, ns := range namespaces {
		if !e.NamespaceGoneOrTerminating(t, ns) {
			t.Errorf("namespace %s not deleted", ns)
		}
	}
}

func TestMinChecksNeedsConsecutivePasses(t *testing.T) {
	e := setup(t)
	ns := shared.Namespace(t)
	podWithPhase(t, ns, "done", map[string]string{"component": "main"}, corev1.PodSucceeded)
	createManager(t, managerObj(ns, ns, ns, []any{podsPolicy("delete after two checks", map[string]any{"component": "main"}, deleteAction,
		func(p map[string]any) { p["minChecks"] = int64(2) })}))

	res := e.Sweep(t, "-l", caseLabel+"="+ns)
	got := wantState(t, res, ns, ns, report.StateWaiting)
	if !strings.Contains(got.Message, "1 of 2 checks passed") {
		t.Errorf("message %q does not count the check", got.Message)
	}
	if checks := managerStatus(t, ns, ns).Checks; checks["delete after two checks"].Passed != 1 {
		t.Errorf("progress not recorded in status: %+v", checks)
	}
	// The next counted check is a period (1s) later.
	err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		res = e.Sweep(t, "-l", caseLabel+"="+ns)
		return res.Entry(t, ns, ns).State == report.StateFired, nil
	})
	if err != nil {
		t.Fatalf("second passing check did not fire: %s", res.Entry(t, ns, ns).Message)
	}
}

// managerStatus decodes the status nsman keeps under its own CRD.
func managerStatus(t *testing.T, ns, name string) status.Status {
	t.Helper()
	var st status.Status
	raw, ok := env.Manager(t, ns, name).Object["status"]
	if !ok {
		return st
	}
	data, err := json.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatalf("status %s: %v", data, err)
	}
	return st
}

// liveClaimFor is how far ahead a live claim expires: within the --claim-ttl
// (1m) of the sweeps the tests run, as a sweep's own claim would be.
const liveClaimFor = 45 * time.Second

// setClaim writes a claim into a manager's status as a sweep does.
func setClaim(t *testing.T, ns, name string, expires time.Time, targetUID types.UID) {
	t.Helper()
	m := env.Manager(t, ns, name)
	claim := status.Claim{Policy: "delete at once", Action: "DELETE", Sweep: "dead-sweep", Expires: expires, Generation: m.GetGeneration(), TargetUID: targetUID}
	patch, err := claimStatus(m.GetGeneration(), claim)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Dynamic.Resource(cluster.ManagerResource).Namespace(ns).Patch(t.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
}

func TestClaims(t *testing.T) {
	e := setup(t)
	live, expired, recreated, future := shared.Namespace(t), shared.Namespace(t), shared.Namespace(t), shared.Namespace(t)
	caseID := live
	uid := map[string]types.UID{}
	for _, ns := range []string{live, expired, recreated, future} {
		createManager(t, managerObj(ns, ns, caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}))
		got, err := shared.Admin.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uid[ns] = got.UID
	}
	// Another sweep holds a claim on one; a dead sweep left one, expired, on
	// another; on the third, the dead sweep's target has since been replaced
	// by a namespace of the same name. The fourth claim expires in an hour,
	// which no sweep with a --claim-ttl of 1m makes: it counts as expired.
	setClaim(t, live, live, time.Now().Add(liveClaimFor), uid[live])
	setClaim(t, expired, expired, time.Now().Add(-time.Minute), uid[expired])
	setClaim(t, recreated, recreated, time.Now().Add(-time.Minute), "uid-of-a-namespace-long-gone")
	setClaim(t, future, future, time.Now().Add(time.Hour), uid[future])

	res := e.Sweep(t, "-l", caseLabel+"="+caseID)
	wantCode(t, res, 0)
	busy := wantState(t, res, live, live, report.StateBusy)
	if !strings.Contains(busy.Message, "dead-sweep") {
		t.Errorf("message %q does not name the claiming sweep", busy.Message)
	}
	if e.NamespaceGoneOrTerminating(t, live) || e.Deactivated(t, live, live) {
		t.Error("a claimed manager was acted on")
	}
	done := wantState(t, res, expired, expired, report.StateFired)
	if !strings.Contains(done.Message, "expired claim") {
		t.Errorf("message %q does not say the claim was completed", done.Message)
	}
	if !e.NamespaceGoneOrTerminating(t, expired) {
		t.Error("the expired claim's DELETE was not completed")
	}
	// The claimed namespace is gone: the claim is complete, and the new
	// namespace of the same name is left alone.
	wantState(t, res, recreated, recreated, report.StateFired)
	if e.NamespaceGoneOrTerminating(t, recreated) {
		t.Error("a namespace recreated since the claim was deleted")
	}
	if !e.Deactivated(t, recreated, recreated) {
		t.Error("completed claim did not deactivate its manager")
	}
	// A claim from the future holds nobody off: it is completed.
	if got := wantState(t, res, future, future, report.StateFired); !strings.Contains(got.Message, "expired claim") {
		t.Errorf("claim an hour ahead: message %q, want it completed as expired", got.Message)
	}
	if !e.NamespaceGoneOrTerminating(t, future) {
		t.Error("a claim an hour ahead kept its manager's DELETE away")
	}
}

// Between two of a Job's pods every existing pod may have succeeded while
// the next is yet to be created: an unfinished Job whose pods match holds a
// PODS_SUCCEED policy back. (Finished Jobs are what the play-out tests run.)
func TestUnfinishedJobHoldsPodsSucceedBack(t *testing.T) {
	e := setup(t)
	ns := shared.Namespace(t)
	podWithPhase(t, ns, "first", map[string]string{"component": "main"}, corev1.PodSucceeded)
	// Suspended, it creates no pod: the only matching pod has succeeded.
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e"},
		Spec: batchv1.JobSpec{
			Suspend:     ptr.To(true),
			Completions: ptr.To[int32](2),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"component": "main"}},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "main", Image: "registry.invalid/e2e:1"}},
				},
			},
		},
	}
	if _, err := shared.Admin.BatchV1().Jobs(ns).Create(t.Context(), job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createManager(t, managerObj(ns, ns, ns, []any{podsPolicy("delete when tests pass", map[string]any{"component": "main"}, deleteAction)}))

	res := e.Sweep(t, "-l", caseLabel+"="+ns)
	got := wantState(t, res, ns, ns, report.StateWaiting)
	if !strings.Contains(got.Message, "job e2e has not finished") {
		t.Errorf("message %q does not name the unfinished job", got.Message)
	}

	// Without the unfinished Job, the policy holds.
	if err := shared.Admin.BatchV1().Jobs(ns).Delete(t.Context(), "e2e", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	res = e.Sweep(t, "-l", caseLabel+"="+ns)
	wantState(t, res, ns, ns, report.StateFired)
}

// A sweep that finds no manager (a newcomer's first run on an empty
// cluster) prints a report whose lists are lists: the README's
// jq '.managers[]' works on it.
func TestEmptySweepPrintsEmptyLists(t *testing.T) {
	e := setup(t)
	res := e.Sweep(t, "-l", caseLabel+"=none-"+shared.Namespace(t))
	if res.Code != 0 {
		t.Fatalf("exit %d\n%s", res.Code, res.Stderr)
	}
	var rep struct {
		Managers json.RawMessage `json:"managers"`
		Summary  struct {
			States   json.RawMessage `json:"states"`
			Requests json.RawMessage `json:"requests"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if string(rep.Managers) != "[]" || string(rep.Summary.States) != "{}" || !strings.HasPrefix(string(rep.Summary.Requests), "{") {
		t.Errorf("managers %s, states %s, requests %s: want [], {} and an object\n%s", rep.Managers, rep.Summary.States, rep.Summary.Requests, res.Stdout)
	}
}
