package integration

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// sleepLoadBalancers is sleepPolicy(from, to) parking LoadBalancers
// (params.loadBalancers).
func sleepLoadBalancers(from, to time.Duration) map[string]any {
	p := sleepPolicy(from, to)
	p["action"] = map[string]any{"type": "SLEEP", "params": map[string]any{"loadBalancers": true}}
	return p
}

// createLoadBalancer creates Service name of type LoadBalancer in ns, of a
// class, source ranges, an external traffic policy Local and an
// annotation of its own: what a wake must bring back.
func createLoadBalancer(t *testing.T, ns, name string) *corev1.Service {
	t.Helper()
	class := "example.com/lb"
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"example.com/dns": "web.example.com"}},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: &class,
			LoadBalancerSourceRanges: []string{"10.0.0.0/8", "192.168.0.0/16"},
			ExternalTrafficPolicy:    corev1.ServiceExternalTrafficPolicyLocal,
			Selector:                 map[string]string{"app": name},
			Ports:                    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	created, err := shared.Admin.CoreV1().Services(ns).Create(t.Context(), svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// service is Service name of ns as it is now.
func service(t *testing.T, ns, name string) *corev1.Service {
	t.Helper()
	svc, err := shared.Admin.CoreV1().Services(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// wantParked fails unless Service name of ns is ClusterIP, without what a
// LoadBalancer has, recording its class, source ranges and policy.
func wantParked(t *testing.T, ns, name string) {
	t.Helper()
	svc := service(t, ns, name)
	if svc.Spec.Type != corev1.ServiceTypeClusterIP || svc.Spec.LoadBalancerClass != nil || len(svc.Spec.LoadBalancerSourceRanges) > 0 ||
		svc.Spec.ExternalTrafficPolicy != "" || svc.Spec.Ports[0].NodePort != 0 {
		t.Errorf("Service %s: spec %+v, want ClusterIP with no class, source ranges, traffic policy or node port", name, svc.Spec)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(svc.Annotations[status.LoadBalancerAnnotation]), &rec); err != nil || rec["type"] != "LoadBalancer" ||
		rec["loadBalancerClass"] != "example.com/lb" || rec["externalTrafficPolicy"] != "Local" || len(rec["loadBalancerSourceRanges"].([]any)) != 2 {
		t.Errorf("Service %s: record %q (%v), want its type, class, source ranges and traffic policy", name, svc.Annotations[status.LoadBalancerAnnotation], err)
	}
}

// wantLoadBalancer fails unless Service name of ns is a LoadBalancer as
// createLoadBalancer made it, with no record.
func wantLoadBalancer(t *testing.T, ns, name string) {
	t.Helper()
	svc := service(t, ns, name)
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || svc.Spec.LoadBalancerClass == nil || *svc.Spec.LoadBalancerClass != "example.com/lb" ||
		!slices.Equal(svc.Spec.LoadBalancerSourceRanges, []string{"10.0.0.0/8", "192.168.0.0/16"}) ||
		svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal || svc.Spec.Ports[0].NodePort == 0 {
		t.Errorf("Service %s: spec %+v, want the LoadBalancer back with its class, source ranges, traffic policy Local and a node port", name, svc.Spec)
	}
	if _, ok := svc.Annotations[status.LoadBalancerAnnotation]; ok || svc.Annotations["example.com/dns"] != "web.example.com" {
		t.Errorf("Service %s: annotations %v, want its own and no record", name, svc.Annotations)
	}
}

// A SLEEP with loadBalancers parks the namespace's LoadBalancer as
// ClusterIP beside web at 0, in one request with its record, and counts it
// freed; a sweep while asleep writes nothing; the wake brings the
// LoadBalancer back with its class, source ranges, traffic policy and
// annotations, and new node ports.
func TestSleepParksLoadBalancersAndWakes(t *testing.T) {
	e := setup(t)
	ns := shared.Namespace(t)
	createDeployment(t, ns, "web", 2)
	createLoadBalancer(t, ns, "web")
	createManager(t, managerObj(ns, ns, ns, []any{sleepLoadBalancers(-time.Hour, 2*time.Hour)}))

	res := e.Sweep(t, "--reclaim", "-l", caseLabel+"="+ns)
	wantCode(t, res, 0)
	slept := wantState(t, res, ns, ns, report.StateFired)
	if !slices.Contains(slept.Effects, "park Service/web as ClusterIP") {
		t.Errorf("effects %q, want Service/web parked", slept.Effects)
	}
	if slept.Reclaimed == nil || slept.Reclaimed.LoadBalancers != 1 {
		t.Errorf("reclaimed %+v, want 1 load balancer", slept.Reclaimed)
	}
	wantWorkload(t, ns, "web", 0, "2")
	wantParked(t, ns, "web")

	before := len(workloadWrites(t, e, ns))
	wantState(t, e.Sweep(t, "-l", caseLabel+"="+ns), ns, ns, report.StateAsleep)
	if writes := workloadWrites(t, e, ns)[before:]; len(writes) > 0 {
		t.Errorf("a sweep while asleep wrote: %v", writes)
	}

	windowLater(t, ns)
	woke := wantState(t, e.Sweep(t, "-l", caseLabel+"="+ns), ns, ns, report.StateFired)
	if !woke.Woke || !slices.Contains(woke.Effects, "unpark Service/web as LoadBalancer") {
		t.Errorf("entry woke %t, effects %q; want Service/web a LoadBalancer again", woke.Woke, woke.Effects)
	}
	wantWorkload(t, ns, "web", 2, "")
	wantLoadBalancer(t, ns, "web")
}

// A LoadBalancer parked that someone makes a LoadBalancer again is awake:
// the next sweep parks it again, and the wake brings it back once.
func TestSleepLoadBalancerUndoneIsPutBack(t *testing.T) {
	e := setup(t)
	ns := shared.Namespace(t)
	createLoadBalancer(t, ns, "web")
	createManager(t, managerObj(ns, ns, ns, []any{sleepLoadBalancers(-time.Hour, 2*time.Hour)}))
	wantState(t, e.Sweep(t, "-l", caseLabel+"="+ns), ns, ns, report.StateFired)
	wantParked(t, ns, "web")

	patch := `{"spec":{"type":"LoadBalancer","loadBalancerClass":"example.com/lb","loadBalancerSourceRanges":["10.0.0.0/8","192.168.0.0/16"],"externalTrafficPolicy":"Local"}}`
	if _, err := shared.Admin.CoreV1().Services(ns).Patch(t.Context(), "web", types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "by-hand"}); err != nil {
		t.Fatal(err)
	}
	res := e.Sweep(t, "-l", caseLabel+"="+ns)
	wantCode(t, res, 0)
	back := wantState(t, res, ns, ns, report.StateFired)
	if back.Woke || len(back.Undone) != 1 || !slices.Equal(back.Effects, []string{"park Service/web as ClusterIP"}) {
		t.Errorf("entry %+v: want Service/web parked again, naming who woke it", back)
	}
	wantParked(t, ns, "web")
	wantState(t, e.Sweep(t, "-l", caseLabel+"="+ns), ns, ns, report.StateAsleep)

	windowLater(t, ns)
	wantState(t, e.Sweep(t, "-l", caseLabel+"="+ns), ns, ns, report.StateFired)
	wantLoadBalancer(t, ns, "web")
}

// servicePatchesApplied counts nsman's writes to Service name of ns that
// the API server applied.
func servicePatchesApplied(t *testing.T, ns, name string) int {
	t.Helper()
	n := 0
	for _, w := range env.Writes(t) {
		if w.Namespace == ns && w.Resource == "services" && w.Name == name && w.Code == 200 {
			n++
		}
	}
	return n
}

// Four sweeps at once park the LoadBalancer once, its record the
// LoadBalancer's (no sweep records the ClusterIP another left), and four
// at once bring it back once.
func TestSleepLoadBalancerOnceUnderConcurrentSweeps(t *testing.T) {
	setup(t)
	ns := shared.Namespace(t)
	createLoadBalancer(t, ns, "web")
	createManager(t, managerObj(ns, ns, ns, []any{sleepLoadBalancers(-time.Hour, 2*time.Hour)}))

	if n := sweepsAtOnce(t, ns); n != 1 {
		t.Errorf("%d sweeps put it to sleep, want 1", n)
	}
	wantParked(t, ns, "web")
	if n := servicePatchesApplied(t, ns, "web"); n != 1 {
		t.Errorf("%d writes to web applied, want the one park", n)
	}

	windowLater(t, ns)
	if n := sweepsAtOnce(t, ns); n != 1 {
		t.Errorf("%d sweeps woke it, want 1", n)
	}
	wantLoadBalancer(t, ns, "web")
	if n := servicePatchesApplied(t, ns, "web"); n != 2 {
		t.Errorf("%d writes to web applied, want the park and the unpark", n)
	}
}

// A SCALE_DOWN with loadBalancers parks the LoadBalancer, and nsman
// restore, which knows no policy, brings it back.
func TestScaleDownParksLoadBalancersRestores(t *testing.T) {
	e := setup(t)
	ns := shared.Namespace(t)
	createLoadBalancer(t, ns, "web")
	createManager(t, managerObj(ns, ns, ns, []any{ttlPolicy("scale at once", 0, map[string]any{"type": "SCALE_DOWN", "params": map[string]any{"loadBalancers": true}})}))
	res := e.Sweep(t, "-l", caseLabel+"="+ns)
	wantCode(t, res, 0)
	wantState(t, res, ns, ns, report.StateFired)
	wantParked(t, ns, "web")

	out, code := runRestore(t, ns)
	if code != 0 {
		t.Fatalf("nsman restore -n %s: exit %d\n%s", ns, code, out)
	}
	wantLoadBalancer(t, ns, "web")
}

// The admission policy lets nsman's ServiceAccount park a LoadBalancer and
// bring it back, and refuses it any other change of a Service: its
// selector, or an annotation not its record.
func TestAdmissionPolicyFencesServices(t *testing.T) {
	e := setup(t)
	sa := saClient(t, e.Kubeconfig)
	ns := shared.Namespace(t)
	createLoadBalancer(t, ns, "web")
	patch := func(p string) error {
		_, err := sa.CoreV1().Services(ns).Patch(t.Context(), "web", types.MergePatchType, []byte(p), metav1.PatchOptions{})
		return err
	}
	if err := patch(`{"metadata":{"annotations":{"` + status.LoadBalancerAnnotation + `":"{\"type\":\"LoadBalancer\"}"}},"spec":{"type":"ClusterIP","loadBalancerClass":null,"loadBalancerSourceRanges":null,"externalTrafficPolicy":null}}`); err != nil {
		t.Errorf("park: %v", err)
	}
	if err := patch(`{"metadata":{"annotations":{"` + status.LoadBalancerAnnotation + `":null}},"spec":{"type":"LoadBalancer","loadBalancerClass":"example.com/lb","externalTrafficPolicy":"Local"}}`); err != nil {
		t.Errorf("unpark: %v", err)
	}
	for _, p := range []string{`{"spec":{"selector":{"app":"other"}}}`, `{"metadata":{"annotations":{"example.com/dns":"evil.example.com"}}}`} {
		if err := patch(p); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), nsmantest.AdmissionPolicy) {
			t.Errorf("patch %s: %v, want the admission policy's refusal", p, err)
		}
	}
}
