package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/owner"
	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/internal/status"
	nsmanwrite "github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// The benchmark of a SLEEP with all three parameters (issue 47): one rule
// over n namespaces, each holding a Deployment kept at paramsKeep
// replicas, a LoadBalancer parked and a Flux HelmRelease suspended, in a
// control plane of its own, at the size of the SLEEP part (sleepSize).
const (
	// paramsLabel=on is what the rule selects namespaces by; the write
	// floors' namespaces say off.
	paramsLabel = "nsman.bench/params"
	// paramsRulesNamespace holds the rule; nsman runs with it trusted
	// (only a trusted rule may have patches).
	paramsRulesNamespace = "bench-params"
	paramsRuleName       = "nights"
	// paramsPrefix names the namespaces the rule matches, also their set;
	// paramsFloorPrefix those the write floors put to sleep and wake.
	paramsPrefix      = "params"
	paramsFloorPrefix = "params-floor"
	// paramsDeployment of paramsAwake replicas is kept at paramsKeep
	// (params.replicas); paramsService is of type LoadBalancer;
	// paramsRelease a HelmRelease labelled paramsApp, which the patch
	// picks.
	paramsDeployment = "web"
	paramsAwake      = 3
	paramsKeep       = 1
	paramsService    = "edge"
	paramsRelease    = "release"
	paramsApp        = "web"
	// paramsObjects is how many objects each namespace holds, each
	// patched once by a sleep and once by a wake.
	paramsObjects = 3
)

// paramsSourceRanges are the LoadBalancer's: its record holds them.
var paramsSourceRanges = []string{"10.0.0.0/8", "192.168.0.0/16"}

// paramsSuspend is the patch of the HelmReleases, and paramsPatchRecord
// the record a sleep writes of it on one never suspended: the patch and
// its inverse.
var (
	paramsSuspend     = map[string]any{"spec": map[string]any{"suspend": true}}
	paramsPatchRecord = `{"patch":{"spec":{"suspend":true}},"inverse":{"spec":{"suspend":null}}}`
)

// helmReleaseKind is Flux's HelmRelease, as InstallGitOpsCRDs serves it.
func helmReleaseKind() owner.Kind {
	k, ok := owner.KindOf(schema.GroupResource{Group: "helm.toolkit.fluxcd.io", Resource: "helmreleases"})
	if !ok {
		panic("no owner kind helmreleases.helm.toolkit.fluxcd.io")
	}
	return k
}

func paramsSleepLabel(n int) string {
	return fmt.Sprintf("nsman sweep, SLEEP (replicas, loadBalancers, patches) puts %d namespaces to sleep", n)
}

func paramsWakeLabel(n int) string {
	return fmt.Sprintf("nsman sweep, SLEEP (replicas, loadBalancers, patches) wakes %d namespaces", n)
}

func paramsSleepFloorLabel(n int) string {
	return fmt.Sprintf("sleep write floor: %d × (claim, %d patches with their records, record), %d workers", n, paramsObjects, floorConcurrency)
}

func paramsWakeFloorLabel(n int) string {
	return fmt.Sprintf("wake write floor: %d × (claim, %d inverse patches, record), %d workers", n, paramsObjects, floorConcurrency)
}

// paramsPolicy is the SLEEP policy of the sleep part, its window open now
// or not, with every parameter.
func paramsPolicy(open bool) map[string]any {
	p := sleepPolicy(open)
	p["action"] = map[string]any{"type": policy.ActionSleep, "params": map[string]any{
		"replicas": int64(paramsKeep), "loadBalancers": true,
		"patches": []any{map[string]any{
			"kind":   helmReleaseKind().Name + "." + helmReleaseKind().Resource.Group,
			"labels": map[string]any{"app": paramsApp}, "patch": paramsSuspend,
		}},
	}}
	return p
}

// paramsWindow opens the rule's window now, or moves it away from now.
func (s seeder) paramsWindow(ctx context.Context, open bool) error {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"policies": []any{paramsPolicy(open)}}})
	if err != nil {
		return err
	}
	if _, err := s.dyn.Resource(cluster.ManagerResource).Namespace(paramsRulesNamespace).Patch(ctx, paramsRuleName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("patch the rule's window: %w", err)
	}
	return nil
}

// grantPatchable applies deploy/components/flux-suspend's RBAC, which
// lets nsman list and patch HelmReleases (nsmantest.Setup installed its
// fence), and waits until the ServiceAccount may list them.
func grantPatchable(ctx context.Context, t *testing.T, s *session) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(nsmantest.RepoRoot(), "deploy", "components", "flux-suspend", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s.env.Apply(t, data)
	dyn, err := dynamic.NewForConfig(s.sa)
	if err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(helmReleaseKind().Resource).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("nsman may not list HelmReleases after deploy/components/flux-suspend's RBAC: %v", err)
	}
}

// paramsSleepers creates n namespaces prefix-00000… labelled
// setLabel=prefix and paramsLabel=rule, each with Deployment
// paramsDeployment of paramsAwake replicas, Service paramsService of type
// LoadBalancer with two source ranges and HelmRelease paramsRelease
// labelled app=paramsApp, each labelled as its namespace too.
func (s seeder) paramsSleepers(ctx context.Context, prefix, rule string, n int) error {
	labels := map[string]string{setLabel: prefix, paramsLabel: rule}
	hr := helmReleaseKind()
	return inParallel(ctx, seedConcurrency, n, func(ctx context.Context, i int) error {
		name := seededName(prefix, i)
		if err := s.namespace(ctx, name, labels); err != nil {
			return err
		}
		d := sleepDeployment(name, paramsDeployment, labels)
		d.Spec.Replicas = ptr.To[int32](paramsAwake)
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: paramsService, Labels: labels},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerSourceRanges: paramsSourceRanges,
				Selector: map[string]string{"app": paramsDeployment}, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
		release := nsmantest.OwnerObject(hr, name, paramsRelease)
		release.SetLabels(map[string]string{setLabel: prefix, "app": paramsApp})
		for _, c := range []struct {
			what string
			do   func() error
		}{
			{"deployment " + paramsDeployment, func() error {
				_, err := s.kube.AppsV1().Deployments(name).Create(ctx, d, metav1.CreateOptions{})
				return err
			}},
			{"service " + paramsService, func() error {
				_, err := s.kube.CoreV1().Services(name).Create(ctx, svc, metav1.CreateOptions{})
				return err
			}},
			{"helmrelease " + paramsRelease, func() error {
				_, err := s.dyn.Resource(hr.Resource).Namespace(name).Create(ctx, release, metav1.CreateOptions{})
				return err
			}},
		} {
			if err := create(ctx, c.do); err != nil {
				return fmt.Errorf("create %s in %s: %w", c.what, name, err)
			}
		}
		return nil
	})
}

// measureParams starts a control plane, seeds n namespaces that a SLEEP
// rule with every parameter matches, its window open, and as many for the
// write floors, and measures sleepRounds times over, in order: nsman's
// sweep that puts them to sleep and the sleep write floor; the first sweep
// while asleep and the next; then, the window moved away from now, nsman's
// sweep that wakes them and the wake write floor; then the window is
// opened again.
func measureParams(t *testing.T, bin string, n int) ([]measurement, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Minute)
	defer cancel()
	s := startSession(ctx, t, bin, n)
	defer s.c.Stop()

	began := time.Now()
	nsmantest.InstallGitOpsCRDs(t, s.env.Dynamic)
	grantPatchable(ctx, t, s)
	for _, set := range [][2]string{{paramsPrefix, "on"}, {paramsFloorPrefix, "off"}} {
		if err := s.seed.paramsSleepers(ctx, set[0], set[1], n); err != nil {
			t.Fatalf("seed: %v", err)
		}
	}
	if err := s.seed.namespace(ctx, paramsRulesNamespace, nil); err != nil {
		t.Fatal(err)
	}
	ruleObj := newManager(paramsRulesNamespace, paramsRuleName, map[string]any{
		"namespaceSelector": map[string]any{"matchLabels": map[string]any{paramsLabel: "on"}},
		"policies":          []any{paramsPolicy(true)},
	})
	rule, err := s.env.Dynamic.Resource(cluster.ManagerResource).Namespace(paramsRulesNamespace).Create(ctx, ruleObj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create rule: %v", err)
	}
	s.step("seeded %d namespaces of %d objects, as many for the write floors, and the rule in %s", n, paramsObjects, time.Since(began).Round(time.Millisecond))
	if _, err := s.audit.next(ctx); err != nil { // the setup is not the sweeps'
		t.Fatal(err)
	}

	trusted := []string{"--trusted-namespaces", paramsRulesNamespace}
	key, ruleRef := status.PairAnnotation(rule.GetUID()), paramsRulesNamespace+"/"+paramsRuleName
	floor := func(what string, wake bool) measurement {
		targets, err := listParamsTargets(ctx, s.sa, paramsFloorPrefix, n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.audit.next(ctx); err != nil { // the lists are not the floor's
			t.Fatal(err)
		}
		start := time.Now()
		if err := sleepWriteFloor(ctx, s.sa, targets, key, ruleRef, wake); err != nil {
			t.Fatal(err)
		}
		return s.measured(measurement{What: what, Wall: time.Since(start)})
	}
	check := func(m, floor measurement, asleep bool) {
		if got := m.States[report.StateFired]; got != n {
			t.Errorf("params over %d: %s fired %d, want %d (%v)", n, m.What, got, n, m.States)
		}
		if err := sameWrites(m, floor, n); err != nil {
			t.Errorf("params over %d: %s: %v", n, m.What, err)
		}
		for _, set := range []string{paramsPrefix, paramsFloorPrefix} {
			if err := s.seed.paramsAre(ctx, set, n, asleep); err != nil {
				t.Errorf("params over %d: after %s and its floor: %v", n, m.What, err)
			}
		}
	}
	var sleeps, sleepFloors, firsts, asleeps, wakes, wakeFloors []measurement
	for r := range sleepRounds {
		if r > 0 {
			if err := s.seed.paramsWindow(ctx, true); err != nil {
				t.Fatal(err)
			}
		}
		m := s.measureSweep(paramsSleepLabel(n), trusted...)
		f := floor(paramsSleepFloorLabel(n), false)
		check(m, f, true)
		sleeps, sleepFloors = append(sleeps, m), append(sleepFloors, f)

		first := s.measureSweep(firstAsleepLabel, trusted...)
		paramsAsleep(t, first, n, "patch namespacemanagers/status")
		m = s.measureSweep(asleepLabel, trusted...)
		paramsAsleep(t, m, n, "")
		firsts, asleeps = append(firsts, first), append(asleeps, m)

		if err := s.seed.paramsWindow(ctx, false); err != nil {
			t.Fatal(err)
		}
		m = s.measureSweep(paramsWakeLabel(n), trusted...)
		f = floor(paramsWakeFloorLabel(n), true)
		check(m, f, false)
		wakes, wakeFloors = append(wakes, m), append(wakeFloors, f)
	}
	s.rows = append(s.rows, median(sleeps), median(sleepFloors), median(firsts), median(asleeps), median(wakes), median(wakeFloors))
	s.step("sleep sweeps %s, floors %s; sweeps while asleep %s; wake sweeps %s, floors %s",
		walls(sleeps), walls(sleepFloors), walls(asleeps), walls(wakes), walls(wakeFloors))
	return s.rows, s.version
}

// paramsAsleep checks that m, a sweep while asleep, found the n namespaces
// asleep and wrote nothing but allowed ("": nothing).
func paramsAsleep(t *testing.T, m measurement, n int, allowed string) {
	t.Helper()
	if got := m.States[report.StateAsleep]; got != n {
		t.Errorf("params over %d: %s found %d asleep, want %d (%v)", n, m.What, got, n, m.States)
	}
	for k, v := range m.Audited {
		if !isRead(k) && k != allowed {
			t.Errorf("params over %d: %s wrote %s %d times (%s)", n, m.What, k, v, describe(m.Audited))
		}
	}
}

// listParamsTargets lists, as the ServiceAccount and untimed (a sweep
// learns the same from its lists), the n namespaces of set and their
// objects, each with how the floor patches it as nsman does: one merge
// patch, conditional on the resourceVersion listed, that changes it and
// writes its record, or (wake) takes the change back and drops the record.
func listParamsTargets(ctx context.Context, cfg *rest.Config, set string, n int) ([]sleepTarget, error) {
	namespaces, err := namespaceTargets(ctx, cfg, set)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	opts := metav1.ListOptions{LabelSelector: setLabel + "=" + set}
	deployments, err := kube.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	services, err := kube.CoreV1().Services(metav1.NamespaceAll).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	releases, err := dyn.Resource(helmReleaseKind().Resource).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	objects := map[string][]workloadTarget{}
	add := func(namespace, name, version string, patch func(wake bool) ([]byte, error), send func(ctx context.Context, body []byte) error) {
		objects[namespace] = append(objects[namespace], workloadTarget{name: name, resourceVersion: version, patch: func(ctx context.Context, wake bool) error {
			body, err := patch(wake)
			if err == nil {
				err = send(ctx, body)
			}
			if err != nil {
				return fmt.Errorf("patch %s/%s: %w", namespace, name, err)
			}
			return nil
		}})
	}
	for _, d := range deployments.Items {
		add(d.Namespace, d.Name, d.ResourceVersion, func(wake bool) ([]byte, error) { return deploymentPatch(d.ResourceVersion, wake), nil },
			func(ctx context.Context, body []byte) error {
				_, err := kube.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, body, metav1.PatchOptions{})
				return err
			})
	}
	for _, svc := range services.Items {
		add(svc.Namespace, svc.Name, svc.ResourceVersion, func(wake bool) ([]byte, error) { return servicePatch(&svc, wake) },
			func(ctx context.Context, body []byte) error {
				_, err := kube.CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, types.MergePatchType, body, metav1.PatchOptions{})
				return err
			})
	}
	for _, hr := range releases.Items {
		add(hr.GetNamespace(), hr.GetName(), hr.GetResourceVersion(), func(wake bool) ([]byte, error) { return releasePatch(hr.GetResourceVersion(), wake), nil },
			func(ctx context.Context, body []byte) error {
				_, err := dyn.Resource(helmReleaseKind().Resource).Namespace(hr.GetNamespace()).Patch(ctx, hr.GetName(), types.MergePatchType, body, metav1.PatchOptions{})
				return err
			})
	}
	targets := make([]sleepTarget, 0, len(namespaces))
	for _, ns := range namespaces {
		if got := len(objects[ns.name]); got != paramsObjects {
			return nil, fmt.Errorf("namespace %s holds %d objects, want %d", ns.name, got, paramsObjects)
		}
		targets = append(targets, sleepTarget{namespace: ns, workloads: objects[ns.name]})
	}
	if len(targets) != n {
		return nil, fmt.Errorf("write floor: %d namespaces listed, want %d", len(targets), n)
	}
	return targets, nil
}

// mergePatch is a merge patch of an object at version that sets
// annotations and spec.
func mergePatch(version string, annotations, spec map[string]any) []byte {
	return []byte(nsmanwrite.MustJSON(map[string]any{
		"metadata": map[string]any{"resourceVersion": version, "annotations": annotations}, "spec": spec}))
}

// deploymentPatch keeps paramsKeep replicas with the count it had and
// paramsKeep recorded, or brings the count back and drops both.
func deploymentPatch(version string, wake bool) []byte {
	if wake {
		return mergePatch(version, map[string]any{status.ReplicasAnnotation: nil, status.ReplicasAsleepAnnotation: nil}, map[string]any{"replicas": paramsAwake})
	}
	return mergePatch(version, map[string]any{status.ReplicasAnnotation: fmt.Sprint(paramsAwake), status.ReplicasAsleepAnnotation: fmt.Sprint(paramsKeep)},
		map[string]any{"replicas": paramsKeep})
}

// servicePatch parks svc as ClusterIP, clearing what a ClusterIP may not
// have, with the record of what a LoadBalancer needs back, or makes it a
// LoadBalancer again with the fields its record holds and drops the
// record.
func servicePatch(svc *corev1.Service, wake bool) ([]byte, error) {
	if wake {
		var lb map[string]any
		if err := json.Unmarshal([]byte(svc.Annotations[status.LoadBalancerAnnotation]), &lb); err != nil {
			return nil, fmt.Errorf("read the record of %s/%s: %w", svc.Namespace, svc.Name, err)
		}
		return mergePatch(svc.ResourceVersion, map[string]any{status.LoadBalancerAnnotation: nil}, lb), nil
	}
	lb := map[string]any{"type": corev1.ServiceTypeLoadBalancer, "loadBalancerSourceRanges": svc.Spec.LoadBalancerSourceRanges,
		"externalTrafficPolicy": svc.Spec.ExternalTrafficPolicy, "allocateLoadBalancerNodePorts": svc.Spec.AllocateLoadBalancerNodePorts}
	return mergePatch(svc.ResourceVersion, map[string]any{status.LoadBalancerAnnotation: nsmanwrite.MustJSON(lb)}, map[string]any{
		"type": corev1.ServiceTypeClusterIP, "loadBalancerClass": nil, "loadBalancerIP": nil, "loadBalancerSourceRanges": nil,
		"externalTrafficPolicy": nil, "allocateLoadBalancerNodePorts": nil, "healthCheckNodePort": nil,
	}), nil
}

// releasePatch suspends a HelmRelease with the record of the patch and
// its inverse, or applies the inverse and drops the record.
func releasePatch(version string, wake bool) []byte {
	if wake {
		return mergePatch(version, map[string]any{status.PatchedAnnotation: nil}, map[string]any{"suspend": nil})
	}
	return mergePatch(version, map[string]any{status.PatchedAnnotation: paramsPatchRecord}, map[string]any{"suspend": true})
}

// paramsAre checks, as the admin, that the objects of the n namespaces of
// set are all asleep (web at paramsKeep, edge ClusterIP, release
// suspended, each with its record) or all awake as seeded (no record).
func (s seeder) paramsAre(ctx context.Context, set string, n int, asleep bool) error {
	opts := metav1.ListOptions{LabelSelector: setLabel + "=" + set}
	deployments, err := s.kube.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, opts)
	if err != nil {
		return err
	}
	services, err := s.kube.CoreV1().Services(metav1.NamespaceAll).List(ctx, opts)
	if err != nil {
		return err
	}
	releases, err := s.dyn.Resource(helmReleaseKind().Resource).List(ctx, opts)
	if err != nil {
		return err
	}
	if got, want := len(deployments.Items)+len(services.Items)+len(releases.Items), n*paramsObjects; got != want {
		return fmt.Errorf("%d objects in set %s, want %d", got, set, want)
	}
	var wrong []string
	for _, d := range deployments.Items {
		replicas, record, keep := ptr.Deref(d.Spec.Replicas, 1), d.Annotations[status.ReplicasAnnotation], d.Annotations[status.ReplicasAsleepAnnotation]
		ok := replicas == paramsAwake && record == "" && keep == ""
		if asleep {
			ok = replicas == paramsKeep && record == fmt.Sprint(paramsAwake) && keep == fmt.Sprint(paramsKeep)
		}
		if !ok {
			wrong = append(wrong, fmt.Sprintf("Deployment %s/%s at %d replicas, records %q %q", d.Namespace, d.Name, replicas, record, keep))
		}
	}
	for _, svc := range services.Items {
		_, recorded := svc.Annotations[status.LoadBalancerAnnotation]
		want := map[bool]corev1.ServiceType{true: corev1.ServiceTypeClusterIP, false: corev1.ServiceTypeLoadBalancer}[asleep]
		if svc.Spec.Type != want || recorded != asleep || !asleep && len(svc.Spec.LoadBalancerSourceRanges) != len(paramsSourceRanges) {
			wrong = append(wrong, fmt.Sprintf("Service %s/%s of type %s, recorded %t, source ranges %v", svc.Namespace, svc.Name, svc.Spec.Type, recorded, svc.Spec.LoadBalancerSourceRanges))
		}
	}
	for _, hr := range releases.Items {
		suspend, _, _ := unstructured.NestedBool(hr.Object, "spec", "suspend")
		record := hr.GetAnnotations()[status.PatchedAnnotation]
		if suspend != asleep || asleep && record != paramsPatchRecord || !asleep && record != "" {
			wrong = append(wrong, fmt.Sprintf("HelmRelease %s/%s suspend %t, record %q", hr.GetNamespace(), hr.GetName(), suspend, record))
		}
	}
	if len(wrong) > 0 {
		return fmt.Errorf("%d of the %d objects are not %s, e.g. %s", len(wrong), n*paramsObjects,
			map[bool]string{true: "asleep", false: "awake"}[asleep], strings.Join(wrong[:min(len(wrong), 3)], "; "))
	}
	return nil
}

// paramsRows are the params part's rows, found by label.
type paramsRows struct {
	sleep, sleepFloor, first, asleep, wake, wakeFloor measurement
}

func paramsRowsOf(rows rowSet) (paramsRows, int) {
	n := rows[0].N
	return paramsRows{
		sleep: rows.must(n, paramsSleepLabel(n)), sleepFloor: rows.must(n, paramsSleepFloorLabel(n)),
		first: rows.must(n, firstAsleepLabel), asleep: rows.must(n, asleepLabel),
		wake: rows.must(n, paramsWakeLabel(n)), wakeFloor: rows.must(n, paramsWakeFloorLabel(n)),
	}, n
}

// paramsTargets computes the targets of the SLEEP with every parameter
// (issue 47): the sleep and the wake against their write floors (sleepBound,
// as issue 33's), what they write per namespace, the sweep while asleep by
// its writes, peak RSS.
func paramsTargets(rows rowSet) []target {
	if len(rows) == 0 {
		return nil
	}
	r, n := paramsRowsOf(rows)
	transition := func(what string, m, floor measurement) target {
		x := ratio(m.Wall, floor.Wall)
		return setAt(sleepMaxSize, target{N: n, Source: "47", Met: x <= sleepBound,
			What:     fmt.Sprintf("SLEEP with replicas, loadBalancers, patches: %s ≤ %.1f × its write floor", what, sleepBound),
			Measured: fmt.Sprintf("%s / %s = %.2f×", m.at(), floor.at(), x)})
	}
	perNamespace := func(m measurement) int { _, each, _ := writesOf(m, n); return each }
	peak, at := peakRSS(rows, n)
	return []target{
		transition(fmt.Sprintf("sweep that puts %d namespaces to sleep", n), r.sleep, r.sleepFloor),
		transition(fmt.Sprintf("sweep that wakes %d namespaces", n), r.wake, r.wakeFloor),
		{N: n, What: "SLEEP with replicas, loadBalancers, patches: writes per namespace of the sleep and the wake = their write floors'", Source: "47",
			Measured: fmt.Sprintf("sleep %d (%s) vs %d (%s), wake %d (%s) vs %d (%s)",
				perNamespace(r.sleep), r.sleep.ref(), perNamespace(r.sleepFloor), r.sleepFloor.ref(),
				perNamespace(r.wake), r.wake.ref(), perNamespace(r.wakeFloor), r.wakeFloor.ref()),
			Met: sameWrites(r.sleep, r.sleepFloor, n) == nil && sameWrites(r.wake, r.wakeFloor, n) == nil},
		{N: n, What: "SLEEP with replicas, loadBalancers, patches: zero writes in a sweep while asleep", Source: "47",
			Measured: fmt.Sprintf("%d (%s)", r.asleep.writes(), r.asleep.ref()), Met: r.asleep.writes() == 0},
		{N: n, What: fmt.Sprintf("SLEEP with replicas, loadBalancers, patches: peak RSS ≤ %d MiB, over every nsman sweep", rssBoundMiB), Source: "47",
			Measured: fmt.Sprintf("%s (%s)", mib(peak), at.ref()), Met: float64(peak)/1024 <= rssBoundMiB},
	}
}

// paramsMethod describes the part of the SLEEP with every parameter.
func paramsMethod(b *strings.Builder, rows rowSet) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	_, n := paramsRowsOf(rows)
	hr := helmReleaseKind()
	p("A fresh control plane of its own, at the size of the SLEEP part (N = %d), with Flux's CRDs (nsmantest.InstallGitOpsCRDs) and\n", n)
	p("deploy/components/flux-suspend applied: its RBAC (list and patch of HelmReleases) and its fence (`configuredPatchable`:\n")
	p("HelmReleases' `spec.suspend`). Seeded: N namespaces labelled `%s=on`, each with the Deployment `%s` of %d replicas,\n", paramsLabel, paramsDeployment, paramsAwake)
	p("the Service `%s` of type LoadBalancer (source ranges %s) and the %s `%s` labelled `app=%s`\n", paramsService, strings.Join(paramsSourceRanges, ", "), hr.Name, paramsRelease, paramsApp)
	p("(no controller runs on the API tier to act on them); as many labelled `%s=off`, with the same objects, for the write\n", paramsLabel)
	p("floors; and one rule, `%s/%s`, in its own namespace (nsman runs with `--trusted-namespaces %s`: only a trusted\n", paramsRulesNamespace, paramsRuleName, paramsRulesNamespace)
	p("rule may patch), with the policy of the SLEEP part and every parameter of its action: `{replicas: %d, loadBalancers: true,\n", paramsKeep)
	p("patches: [{kind: %s.%s, labels: {app: %s}, patch: {spec: {suspend: true}}}]}`.\n\n", hr.Name, hr.Resource.Group, paramsApp)
	p("Then, %d times over: nsman's sweep that puts every namespace to sleep; the sleep write floor; nsman's first sweep while asleep\n", sleepRounds)
	p("(which may record the rule's status) and the next (which must write nothing); the rule's window moved to open five hours from\n")
	p("now; nsman's sweep that wakes every namespace; the wake write floor; the window opened again. The rows are the median runs;\n")
	p("the notes list every run. The generator fails the run unless each sleep and wake sweep fired on every namespace and wrote\n")
	p("per namespace what its write floor writes (audit log), the sweeps while asleep found every namespace asleep and wrote nothing\n")
	p("(the first may record the rule's status), and every object of both sets was asleep, or awake as seeded, after each sleep and wake.\n\n")
	p("The floors are minimal client-go code, as the ServiceAccount, unthrottled, with %d workers, handed their targets (the\n", floorConcurrency)
	p("namespaces `%s=off` and their objects, listed untimed, as in the SLEEP part):\n\n", paramsLabel)
	p("- the sleep write floor, per namespace: the claim and the record of the SLEEP part's floor, and between them one merge patch\n")
	p("  per object, conditional on its listed resourceVersion: `%s` to `spec.replicas: %d` with\n", paramsDeployment, paramsKeep)
	p("  `%s` and `%s`;\n", status.ReplicasAnnotation, status.ReplicasAsleepAnnotation)
	p("  `%s` to `spec.type: ClusterIP`, what a ClusterIP may not have cleared, with `%s`\n", paramsService, status.LoadBalancerAnnotation)
	p("  (its type, source ranges, traffic policy and node-port allocation, as JSON); `%s` to `spec.suspend: true` with\n", paramsRelease)
	p("  `%s` (the patch and its inverse): %d writes, the requests nsman sends.\n", status.PatchedAnnotation, paramsObjects+2)
	p("- the wake write floor, on the namespaces the sleep write floor put to sleep: the same claim, the inverse patches (the count\n")
	p("  back, the LoadBalancer back with its fields, the suspension taken back), each dropping its records, and the record.\n\n")
}

// paramsAnalysis writes what the part of the SLEEP with every parameter
// says.
func paramsAnalysis(b *strings.Builder, rows rowSet) {
	if len(rows) == 0 {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	r, n := paramsRowsOf(rows)
	transition := func(what string, m, floor measurement) { transitionAnalysis(b, n, what, m, floor) }
	p("**A SLEEP with replicas, loadBalancers and patches over %d namespaces.** ", n)
	transition("put them to sleep", r.sleep, r.sleepFloor)
	p("The first sweep while asleep took %s and made %d requests (%s); the next took %s and made %d requests, %d of them writes (%s):\n",
		r.first.at(), r.first.total(), describe(r.first.Audited), r.asleep.at(), r.asleep.total(), r.asleep.writes(), describe(r.asleep.Audited))
	p("%d of them lists of %s, the patch's kind, which a sweep lists once for each patch, cluster-wide, past %d namespaces asleep,\n",
		r.asleep.count("list", helmReleaseKind().Resource.Resource), helmReleaseKind().Resource.Resource, probe.AwakeIndexAfter)
	p("as it lists each kind of workload (docs/sleep.md, \"patches\").\n")
	transition("woke them", r.wake, r.wakeFloor)
	p("\n")
}
