package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nsman/nsman/cmd"
	"github.com/nsman/nsman/explain"
	"github.com/nsman/nsman/sweep"
	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

// widgetCRD is a namespaced custom resource whose finalizer no controller
// removes.
const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.explain.nsman.test}
spec:
  group: explain.nsman.test
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

var widgets = schema.GroupVersionResource{Group: "explain.nsman.test", Version: "v1", Resource: "widgets"}

// runExplain runs nsman explain -o json as admin.
func runExplain(t *testing.T, namespace string) (int, explain.Report, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := cmd.Execute(t.Context(), []string{"explain", namespace, "-o", "json", "--kubeconfig", shared.Kubeconfig}, &stdout, &stderr)
	var r explain.Report
	if code == cmd.ExitOK {
		if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
			t.Fatalf("nsman explain %s: not JSON (%v):\n%s", namespace, err, stdout.String())
		}
	}
	return code, r, stderr.String()
}

// TestExplainStuckNamespaces deletes, on the full control plane (the
// namespace controller running), a namespace that holds a custom resource
// whose finalizer nobody removes, and one with a finalizer of its own;
// nsman explain names what holds each, and the command it prints for the
// custom resource, run as printed, lets the namespace go.
func TestExplainStuckNamespaces(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	e.Apply(t, []byte(widgetCRD))

	// A widget whose finalizer nobody removes.
	held := shared.Namespace(t)
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "explain.nsman.test/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1", "finalizers": []any{"explain.nsman.test/hold"}},
	}}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := e.Dynamic.Resource(widgets).Namespace(held).Create(ctx, w, metav1.CreateOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("create the widget: %v", err)
	}
	if code, r, _ := runExplain(t, held); code != cmd.ExitOK || r.Phase != "Active" || len(r.Unblock) != 0 {
		t.Errorf("an active namespace: exit %d, %+v; want it said to be Active, nothing to unblock", code, r)
	}
	if err := shared.Admin.CoreV1().Namespaces().Delete(ctx, held, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The namespace controller says why once it has deleted what it can.
	var r explain.Report
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, r, _ = runExplain(t, held)
		return slices.ContainsFunc(r.Conditions, func(c corev1.NamespaceCondition) bool {
			return c.Type == corev1.NamespaceFinalizersRemaining && c.Status == corev1.ConditionTrue
		}), nil
	}); err != nil {
		t.Fatalf("no NamespaceFinalizersRemaining condition on %s: %+v", held, r)
	}
	if r.Phase != "Terminating" || !slices.ContainsFunc(r.Remaining, func(res explain.Resource) bool {
		return res.Resource == "widgets.explain.nsman.test" && res.Count == 1 && len(res.Finalized) == 1 &&
			res.Finalized[0].Name == "w1" && slices.Equal(res.Finalized[0].Finalizers, []string{"explain.nsman.test/hold"})
	}) {
		t.Fatalf("report %+v: want the widget w1 and its finalizer among what is left", r)
	}
	i := slices.IndexFunc(r.Unblock, func(s explain.Step) bool { return strings.Contains(s.Holds, "explain.nsman.test/hold") })
	if i < 0 || r.Unblock[i].Command == "" || r.Unblock[i].Warning == "" || !strings.Contains(r.Unblock[i].Unblock, "its prefix names explain.nsman.test") {
		t.Fatalf("steps %+v: want one for the finalizer, naming its owner, with a command and a warning", r.Unblock)
	}
	// The command as printed (kubectl ... patch ... -p '...'), run.
	command := strings.Fields(r.Unblock[i].Command)
	if command[0] != "kubectl" {
		t.Fatalf("command %q does not start with kubectl", r.Unblock[i].Command)
	}
	args := append(command[1:len(command)-1], strings.Trim(command[len(command)-1], "'"), "--kubeconfig", shared.Kubeconfig)
	if out, err := exec.CommandContext(ctx, nsmantest.Kubectl(t), args...).CombinedOutput(); err != nil {
		t.Fatalf("the printed command %q: %v\n%s", r.Unblock[i].Command, err, out)
	}
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := shared.Admin.CoreV1().Namespaces().Get(ctx, held, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("namespace %s still there after the printed command", held)
	}
	if code, _, stderr := runExplain(t, held); code != cmd.ExitFailed || !strings.Contains(stderr, "namespace not found") {
		t.Errorf("a namespace that is gone: exit %d, %q; want %d, saying so", code, stderr, cmd.ExitFailed)
	}

	// A namespace with a finalizer of its own.
	own := shared.Namespace(t)
	ns, err := shared.Admin.CoreV1().Namespaces().Get(ctx, own, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Spec.Finalizers = append(ns.Spec.Finalizers, "explain.nsman.test/own")
	if _, err := shared.Admin.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := shared.Admin.CoreV1().Namespaces().Delete(ctx, own, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, r, _ = runExplain(t, own)
		return slices.Equal(r.Finalizers, []string{"explain.nsman.test/own"}), nil
	}); err != nil {
		t.Fatalf("report %+v: want the namespace's own finalizer alone left", r)
	}
	if i := slices.IndexFunc(r.Unblock, func(s explain.Step) bool {
		return strings.Contains(s.Holds, "the namespace's own finalizer explain.nsman.test/own") && strings.Contains(s.Command, "/api/v1/namespaces/"+own+"/finalize")
	}); i < 0 {
		t.Errorf("steps %+v: want the namespace's own finalizer, with the finalize command", r.Unblock)
	}
	// Let it go.
	ns, err = shared.Admin.CoreV1().Namespaces().Get(ctx, own, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Spec.Finalizers = nil
	if _, err := shared.Admin.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestExplainUnavailableAPIService registers, on a full control plane of
// its own (it stalls every namespace deletion there), an APIService whose
// Service does not exist, lets a manager delete a namespace, and checks
// that nsman explain names the APIService, the group that cannot be
// discovered, and what would unblock them, and that a sweep past
// --stuck-after names the APIService too.
func TestExplainUnavailableAPIService(t *testing.T) {
	ctx, c := ownControlPlane(t, cluster.Options{Tier: cluster.FullTier})
	e, err := nsmantest.Setup(ctx, c, nsmantest.CRD(t))
	if err != nil {
		t.Fatal(err)
	}
	ns := c.Namespace(t)
	home := nsmantest.ServiceAccountNamespace
	deleter := managerObj(home, "deleter", ns, []any{ttlPolicy("delete at once", 0, deleteAction)}, targeting(ns))
	if _, err := e.Dynamic.Resource(sweep.ManagerResource).Namespace(home).Create(ctx, deleter, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.Apply(t, []byte(`apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1.gone.nsman.test}
spec:
  group: gone.nsman.test
  version: v1
  service: {namespace: default, name: gone}
  groupPriorityMinimum: 1000
  versionPriority: 15
  insecureSkipTLSVerify: true
`))
	args := []string{"-l", caseLabel + "=" + ns, "--stuck-after", "1s"}
	wantState(t, e.Sweep(t, args...), home, "deleter", sweep.StateFired)
	var r explain.Report
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var stdout, stderr bytes.Buffer
		if code := cmd.Execute(ctx, []string{"explain", ns, "-o", "json", "--kubeconfig", c.Kubeconfig}, &stdout, &stderr); code != cmd.ExitOK {
			return false, nil
		}
		r = explain.Report{}
		_ = json.Unmarshal(stdout.Bytes(), &r)
		return len(r.UnavailableAPIServices) > 0 && slices.ContainsFunc(r.Conditions, func(c corev1.NamespaceCondition) bool {
			return c.Type == corev1.NamespaceDeletionDiscoveryFailure && c.Status == corev1.ConditionTrue
		}), nil
	}); err != nil {
		t.Fatalf("report %+v: want the unavailable APIService and the discovery failure", r)
	}
	if a := r.UnavailableAPIServices[0]; a.Name != "v1.gone.nsman.test" || a.Service != "default/gone" {
		t.Errorf("unavailable APIService %+v, want v1.gone.nsman.test behind default/gone", a)
	}
	if !slices.ContainsFunc(r.Unlisted, func(u explain.Unlisted) bool { return u.What == "API group gone.nsman.test/v1" }) {
		t.Errorf("not read %+v: want the group gone.nsman.test/v1", r.Unlisted)
	}
	if !slices.ContainsFunc(r.Unblock, func(s explain.Step) bool {
		return strings.Contains(s.Holds, "APIService v1.gone.nsman.test is unavailable") && s.Command == "kubectl delete apiservice v1.gone.nsman.test" && strings.Contains(s.Holds, "no namespace of the cluster")
	}) {
		t.Errorf("steps %+v: want the APIService's, with its command", r.Unblock)
	}
	d := wantState(t, e.Sweep(t, args...), home, "deleter", sweep.StateTargetTerminating)
	if !hasReason(d.Stuck, sweep.StuckDiscoveryFailure, "APIService v1.gone.nsman.test (gone.nsman.test/v1) is unavailable") {
		t.Errorf("the deleter's entry %+v (stuck %+v): want the discovery failure, naming the APIService", d, d.Stuck)
	}
}
