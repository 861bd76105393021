package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/workload"
	nsmanwrite "github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// The SLEEP benchmark (issue 33): one SLEEP rule over n namespaces of
// sleepWorkloads workloads each, in a control plane of its own.
const (
	// sleepMaxSize is the size the part runs at, and its targets are set
	// at ("a SLEEP rule over 1,000 namespaces"); a run whose largest size
	// is smaller runs it at that size.
	sleepMaxSize = 1000
	// sleepLabel=on is what the rule selects namespaces by; the write
	// floors' namespaces say off.
	sleepLabel = "nsman.bench/sleep"
	// sleepRulesNamespace holds the rule; nsman runs with it trusted.
	sleepRulesNamespace = "bench-sleep"
	sleepRuleName       = "nights"
	sleepPolicyName     = "nights"
	// sleepPrefix names the namespaces the rule matches, also their set;
	// sleepFloorPrefix those the write floors put to sleep and wake.
	sleepPrefix      = "sleep"
	sleepFloorPrefix = "sleep-floor"
	// sleepReplicas are each Deployment's replicas while awake.
	sleepReplicas = 1
	// sleepCronJob is the CronJob each namespace holds.
	sleepCronJob = "nightly"
	// sleepRounds is how many times the sleep, the sweeps while asleep and
	// the wake are measured, with their floors, interleaved.
	sleepRounds = 3
	// asleepLabel and firstAsleepLabel label the sweeps while asleep: the
	// first after the sleep, which finds the rule's status counting the
	// namespaces fired, not asleep, and the next.
	firstAsleepLabel = "nsman sweep, first while asleep"
	asleepLabel      = "nsman sweep, while asleep (nothing to do)"
	// sleepListsPrefix starts the label of the read floor with the
	// workload lists.
	sleepListsPrefix = floorPlusPrefix + "paged LIST of each kind nsman puts to sleep"
)

// sleepDeployments are the Deployments each namespace holds, beside
// sleepCronJob.
var sleepDeployments = []string{"web", "api"}

// sleepWorkloads is how many workloads each namespace holds.
var sleepWorkloads = len(sleepDeployments) + 1

// sleepSize is the size the part runs at among sizes.
func sleepSize(sizes []int) int { return min(slices.Max(sizes), sleepMaxSize) }

func sleepSweepLabel(n int) string {
	return fmt.Sprintf("nsman sweep, SLEEP puts %d namespaces to sleep", n)
}

func wakeSweepLabel(n int) string { return fmt.Sprintf("nsman sweep, SLEEP wakes %d namespaces", n) }

func sleepFloorLabel(n int) string {
	return fmt.Sprintf("sleep write floor: %d × (claim, %d workload patches, record), %d workers", n, sleepWorkloads, floorConcurrency)
}

func wakeFloorLabel(n int) string {
	return fmt.Sprintf("wake write floor: %d × (claim, %d workload patches, record), %d workers", n, sleepWorkloads, floorConcurrency)
}

// sleepListsLabel is the label of the read floor with the lists of kinds.
func sleepListsLabel(kinds []probe.Selection) string {
	names := make([]string, 0, len(kinds))
	for _, k := range kinds {
		names = append(names, k.Kind.Resource.Resource)
	}
	return sleepListsPrefix + " (" + strings.Join(names, ", ") + ")"
}

// measureSleep starts a control plane, seeds n namespaces of
// sleepWorkloads workloads each that a SLEEP rule matches, whose window is
// open, and as many for the write floors, and measures sleepRounds times
// over, in order: nsman's sweep that puts them to sleep and the sleep write
// floor; the first sweep while asleep; the read floor, the read floor with
// the workload lists and a sweep while asleep; then, the rule's window
// moved away from now, nsman's sweep that wakes them and the wake write
// floor; then the window is opened again.
func measureSleep(t *testing.T, bin string, n int) ([]measurement, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Minute)
	defer cancel()
	s := startSession(ctx, t, bin, n)
	defer s.c.Stop()

	began := time.Now()
	if err := s.seed.sleepers(ctx, sleepPrefix, "on", n); err != nil {
		t.Fatalf("seed: %v", err)
	}
	if err := s.seed.sleepers(ctx, sleepFloorPrefix, "off", n); err != nil {
		t.Fatalf("seed: %v", err)
	}
	if err := s.seed.namespace(ctx, sleepRulesNamespace, nil); err != nil {
		t.Fatal(err)
	}
	rule, err := s.env.Dynamic.Resource(cluster.ManagerResource).Namespace(sleepRulesNamespace).Create(ctx, sleepRuleObject(true), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create rule: %v", err)
	}
	s.step("seeded %d namespaces of %d workloads, as many for the write floors, and the rule in %s", n, sleepWorkloads, time.Since(began).Round(time.Millisecond))

	// The kinds nsman puts to sleep and reads while asleep, as it finds
	// them with its ServiceAccount's discovery.
	kube, err := kubernetes.NewForConfig(s.sa)
	if err != nil {
		t.Fatal(err)
	}
	kinds, _, err := new(probe.Kinds).All(ctx, kube)
	if err != nil {
		t.Fatal(err)
	}
	listsLabel := sleepListsLabel(kinds)
	if _, err := s.audit.next(ctx); err != nil { // the discovery and the setup are not the sweep's
		t.Fatal(err)
	}

	trusted := []string{"--trusted-namespaces", sleepRulesNamespace}
	key, ruleRef := status.PairAnnotation(rule.GetUID()), sleepRulesNamespace+"/"+sleepRuleName
	// floorTargets lists, untimed, what a write floor writes to.
	floorTargets := func() []sleepTarget {
		targets, err := listSleepTargets(ctx, s.sa, sleepFloorPrefix)
		if err != nil {
			t.Fatal(err)
		}
		if len(targets) != n {
			t.Fatalf("sleep write floor: %d namespaces listed, want %d", len(targets), n)
		}
		if _, err := s.audit.next(ctx); err != nil { // the lists are not the floor's
			t.Fatal(err)
		}
		return targets
	}
	floor := func(what string, wake bool) measurement {
		targets := floorTargets()
		start := time.Now()
		if err := sleepWriteFloor(ctx, s.sa, targets, key, ruleRef, wake); err != nil {
			t.Fatal(err)
		}
		return s.measured(measurement{What: what, Wall: time.Since(start)})
	}
	// fired checks that sweep m acted on every namespace, wrote what floor
	// wrote per namespace, and left the workloads asleep or awake.
	fired := func(m, floor measurement, asleep bool) {
		if got := m.States[report.StateFired]; got != n {
			t.Errorf("SLEEP over %d: %s fired %d, want %d (%v)", n, m.What, got, n, m.States)
		}
		if err := sameWrites(m, floor, n); err != nil {
			t.Errorf("SLEEP over %d: %s: %v", n, m.What, err)
		}
		if err := s.seed.workloadsAre(ctx, sleepPrefix, n, asleep); err != nil {
			t.Errorf("SLEEP over %d: after %s: %v", n, m.What, err)
		}
	}
	// asleep checks that m found every namespace asleep and wrote none of
	// writes (nil: nothing).
	asleep := func(m measurement, writes func(string) bool) {
		if got := m.States[report.StateAsleep]; got != n {
			t.Errorf("SLEEP over %d: %s found %d asleep, want %d (%v)", n, m.What, got, n, m.States)
		}
		for k, v := range m.Audited {
			if !isRead(k) && (writes == nil || writes(k)) {
				t.Errorf("SLEEP over %d: %s wrote %s %d times (%s)", n, m.What, k, v, describe(m.Audited))
			}
		}
	}

	var sleeps, sleepFloors, firsts, readFloors, pluses, asleeps, wakes, wakeFloors []measurement
	for r := range sleepRounds {
		if r > 0 {
			if err := s.seed.sleepWindow(ctx, true); err != nil {
				t.Fatal(err)
			}
		}
		m := s.measureSweep(sleepSweepLabel(n), trusted...)
		f := floor(sleepFloorLabel(n), false)
		fired(m, f, true)
		sleeps, sleepFloors = append(sleeps, m), append(sleepFloors, f)

		// The first sweep while asleep may record the rule's status, which
		// now counts the namespaces asleep; nothing else.
		first := s.measureSweep(firstAsleepLabel, trusted...)
		asleep(first, func(k string) bool { return k != "patch namespacemanagers/status" })
		firsts = append(firsts, first)
		readFloors = append(readFloors, s.readFloor())
		pluses = append(pluses, s.readFloorPlus(listsLabel, func() (string, error) { return floorWorkloadLists(ctx, s.sa, kinds) }))
		m = s.measureSweep(asleepLabel, trusted...)
		asleep(m, nil)
		asleeps = append(asleeps, m)

		if err := s.seed.sleepWindow(ctx, false); err != nil {
			t.Fatal(err)
		}
		m = s.measureSweep(wakeSweepLabel(n), trusted...)
		f = floor(wakeFloorLabel(n), true)
		fired(m, f, false)
		wakes, wakeFloors = append(wakes, m), append(wakeFloors, f)
	}
	ms := []measurement{median(sleeps), median(sleepFloors), median(firsts), median(readFloors), median(pluses), median(asleeps), median(wakes), median(wakeFloors)}
	s.rows = append(s.rows, ms...)
	s.step("sleep sweeps %s, floors %s; sweeps while asleep %s, read floors with the workload lists %s; wake sweeps %s, floors %s",
		walls(sleeps), walls(sleepFloors), walls(asleeps), walls(pluses), walls(wakes), walls(wakeFloors))
	return s.rows, s.version
}

// sameWrites says how m's writes per namespace differ from floor's, both
// over n namespaces; nil when they are the same.
func sameWrites(m, floor measurement, n int) error {
	got, _, besides := writesOf(m, n)
	want, _, _ := writesOf(floor, n)
	var diff []string
	keys := maps.Clone(got)
	maps.Copy(keys, want)
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if got[k] != want[k] {
			diff = append(diff, fmt.Sprintf("%s %d, the floor %d", k, got[k], want[k]))
		}
	}
	if len(diff) > 0 {
		return fmt.Errorf("writes per namespace: %s (besides, once per run: %s)", strings.Join(diff, "; "), cmpOr(describe(besides), "none"))
	}
	return nil
}

// sleepRuleObject is the rule: in sleepRulesNamespace, over the namespaces
// labelled sleepLabel=on, one SLEEP policy, TTL 0, whose window (UTC) is
// open now or, with open false, opens hours from now.
func sleepRuleObject(open bool) *unstructured.Unstructured {
	return newManager(sleepRulesNamespace, sleepRuleName, map[string]any{
		"namespaceSelector": map[string]any{"matchLabels": map[string]any{sleepLabel: "on"}},
		"policies":          []any{sleepPolicy(open)},
	})
}

// sleepPolicy is the rule's policy, its window open now or not: the run
// ends well within the hours either stays so.
func sleepPolicy(open bool) map[string]any {
	now := time.Now().UTC()
	from, to := now.Add(-time.Hour), now.Add(3*time.Hour)
	if !open {
		from, to = now.Add(5*time.Hour), now.Add(6*time.Hour)
	}
	return map[string]any{
		"name":      sleepPolicyName,
		"condition": map[string]any{"type": policy.ConditionTTL, "params": map[string]any{"ttlSeconds": int64(0)}},
		"windows":   []any{map[string]any{"from": from.Format("15:04"), "to": to.Format("15:04"), "timeZone": "UTC"}},
		"action":    map[string]any{"type": policy.ActionSleep},
	}
}

// sleepWindow opens the rule's window now, or moves it away from now.
func (s seeder) sleepWindow(ctx context.Context, open bool) error {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"policies": []any{sleepPolicy(open)}}})
	if err != nil {
		return err
	}
	if _, err := s.dyn.Resource(cluster.ManagerResource).Namespace(sleepRulesNamespace).Patch(ctx, sleepRuleName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("patch the rule's window: %w", err)
	}
	return nil
}

// sleepers creates n namespaces prefix-00000… labelled setLabel=prefix and
// sleepLabel=rule, each with the Deployments sleepDeployments of
// sleepReplicas replicas and the CronJob sleepCronJob, labelled as their
// namespace.
func (s seeder) sleepers(ctx context.Context, prefix, rule string, n int) error {
	labels := map[string]string{setLabel: prefix, sleepLabel: rule}
	return inParallel(ctx, seedConcurrency, n, func(ctx context.Context, i int) error {
		name := seededName(prefix, i)
		if err := s.namespace(ctx, name, labels); err != nil {
			return err
		}
		for _, d := range sleepDeployments {
			if err := create(ctx, func() error {
				_, err := s.kube.AppsV1().Deployments(name).Create(ctx, sleepDeployment(name, d, labels), metav1.CreateOptions{})
				return err
			}); err != nil {
				return fmt.Errorf("create deployment %s/%s: %w", name, d, err)
			}
		}
		if err := create(ctx, func() error {
			_, err := s.kube.BatchV1().CronJobs(name).Create(ctx, sleepCronJobObject(name, labels), metav1.CreateOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("create cronjob %s/%s: %w", name, sleepCronJob, err)
		}
		return nil
	})
}

func sleepPodSpec(restart corev1.RestartPolicy) corev1.PodSpec {
	return corev1.PodSpec{RestartPolicy: restart, Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}}
}

func sleepDeployment(namespace, name string, labels map[string]string) *appsv1.Deployment {
	app := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](sleepReplicas),
			Selector: &metav1.LabelSelector{MatchLabels: app},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: app}, Spec: sleepPodSpec(corev1.RestartPolicyAlways)},
		},
	}
}

func sleepCronJobObject(namespace string, labels map[string]string) *batchv1.CronJob {
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: sleepCronJob, Labels: labels},
		Spec: batchv1.CronJobSpec{
			Schedule: "0 3 * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
				Spec: sleepPodSpec(corev1.RestartPolicyNever),
			}}},
		},
	}
}

// workloadsAre checks, as the admin, that the workloads of the n
// namespaces of set are all asleep (replicas 0, suspended, each with its
// record) or all awake as seeded (no record).
func (s seeder) workloadsAre(ctx context.Context, set string, n int, asleep bool) error {
	opts := metav1.ListOptions{LabelSelector: setLabel + "=" + set}
	deployments, err := s.kube.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, opts)
	if err != nil {
		return err
	}
	cronJobs, err := s.kube.BatchV1().CronJobs(metav1.NamespaceAll).List(ctx, opts)
	if err != nil {
		return err
	}
	if got, want := len(deployments.Items)+len(cronJobs.Items), n*sleepWorkloads; got != want {
		return fmt.Errorf("%d workloads in set %s, want %d", got, set, want)
	}
	var wrong []string
	for _, d := range deployments.Items {
		replicas, record := ptr.Deref(d.Spec.Replicas, 1), d.Annotations[status.ReplicasAnnotation]
		if asleep && (replicas != 0 || record != fmt.Sprint(sleepReplicas)) || !asleep && (replicas != sleepReplicas || record != "") {
			wrong = append(wrong, fmt.Sprintf("Deployment %s/%s at %d replicas, record %q", d.Namespace, d.Name, replicas, record))
		}
	}
	for _, c := range cronJobs.Items {
		suspended, record := ptr.Deref(c.Spec.Suspend, false), c.Annotations[status.SuspendAnnotation]
		if suspended != asleep || asleep != (record == "false") {
			wrong = append(wrong, fmt.Sprintf("CronJob %s/%s suspended %t, record %q", c.Namespace, c.Name, suspended, record))
		}
	}
	if len(wrong) > 0 {
		return fmt.Errorf("%d of the %d workloads are not %s, e.g. %s", len(wrong), n*sleepWorkloads,
			map[bool]string{true: "asleep", false: "awake"}[asleep], strings.Join(wrong[:min(len(wrong), 3)], "; "))
	}
	return nil
}

// sleepTarget is what a sleep or wake write floor needs of one namespace:
// its uid and version, and each workload's.
type sleepTarget struct {
	namespace writeTarget
	workloads []workloadTarget
}

type workloadTarget struct {
	name, resourceVersion string
	cronJob               bool
	// patch, when set, is how the floor puts an object of another kind
	// to sleep or wakes it (the params part's: its clients made while
	// listed, untimed).
	patch func(ctx context.Context, wake bool) error
}

// listSleepTargets lists the namespaces of set and their workloads, as the
// ServiceAccount (not timed: a sweep learns the same from its lists).
func listSleepTargets(ctx context.Context, cfg *rest.Config, set string) ([]sleepTarget, error) {
	namespaces, err := namespaceTargets(ctx, cfg, set)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	opts := metav1.ListOptions{LabelSelector: setLabel + "=" + set}
	deployments, err := kube.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	cronJobs, err := kube.BatchV1().CronJobs(metav1.NamespaceAll).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	workloads := map[string][]workloadTarget{}
	for _, d := range deployments.Items {
		workloads[d.Namespace] = append(workloads[d.Namespace], workloadTarget{name: d.Name, resourceVersion: d.ResourceVersion})
	}
	for _, c := range cronJobs.Items {
		workloads[c.Namespace] = append(workloads[c.Namespace], workloadTarget{name: c.Name, resourceVersion: c.ResourceVersion, cronJob: true})
	}
	targets := make([]sleepTarget, 0, len(namespaces))
	for _, ns := range namespaces {
		if got := len(workloads[ns.name]); got != sleepWorkloads {
			return nil, fmt.Errorf("namespace %s holds %d workloads, want %d", ns.name, got, sleepWorkloads)
		}
		targets = append(targets, sleepTarget{namespace: ns, workloads: workloads[ns.name]})
	}
	return targets, nil
}

// sleepWriteFloor makes, per namespace and with nsman's concurrency, the
// writes of a rule's SLEEP transition (wake: of its wake): the claim (a
// merge patch of the namespace, conditional on its listed resourceVersion,
// that sets the pair's annotation key to a record holding the claim), one
// merge patch per workload conditional on its listed resourceVersion
// (asleep: replicas 0 or suspended, with the record of what it was; awake:
// the replicas or the schedule back, the record removed), then the record
// (a JSON patch that tests the annotation still holds the claim and
// replaces it with the outcome), as nsman's rule records do.
func sleepWriteFloor(ctx context.Context, cfg *rest.Config, targets []sleepTarget, key, rule string, wake bool) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	return parallel(ctx, len(targets), func(ctx context.Context, i int) error {
		t := targets[i]
		name := t.namespace.name
		claimed := nsmanwrite.MustJSON(status.PairStatus{Rule: rule, Progress: status.Progress{Claim: &status.Claim{
			Policy: sleepPolicyName, Action: policy.ActionSleep, Sweep: "write-floor", Expires: now.Add(time.Minute), Generation: 1,
			TargetUID: t.namespace.uid, Wake: wake,
		}}})
		claim := nsmanwrite.MustJSON(map[string]any{"metadata": map[string]any{
			"resourceVersion": t.namespace.resourceVersion,
			"annotations":     map[string]string{key: claimed},
		}})
		if _, err := kube.CoreV1().Namespaces().Patch(ctx, name, types.MergePatchType, []byte(claim), metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("claim namespace %s: %w", name, err)
		}
		for _, w := range t.workloads {
			if err := patchWorkload(ctx, kube, name, w, wake); err != nil {
				return err
			}
		}
		outcome := status.PairStatus{Rule: rule, Progress: status.Progress{LastAction: &status.LastAction{
			Policy: sleepPolicyName, Action: policy.ActionSleep, Result: report.ResultSucceeded, Time: now, TargetUID: t.namespace.uid,
		}}}
		if !wake {
			outcome.Asleep = &status.Asleep{Policy: sleepPolicyName, Since: now}
		}
		path := nsmanwrite.AnnotationPointer(key)
		record := nsmanwrite.JSONPatch("", nsmanwrite.PatchOp{Op: "test", Path: path, Value: claimed}, nsmanwrite.PatchOp{Op: "replace", Path: path, Value: nsmanwrite.MustJSON(outcome)})
		if _, err := kube.CoreV1().Namespaces().Patch(ctx, name, record.Type(), record.Body, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("record namespace %s: %w", name, err)
		}
		return nil
	})
}

// patchWorkload puts w in namespace to sleep, or wakes it, in one merge
// patch conditional on its listed resourceVersion, as nsman does.
func patchWorkload(ctx context.Context, kube kubernetes.Interface, namespace string, w workloadTarget, wake bool) error {
	if w.patch != nil {
		return w.patch(ctx, wake)
	}
	var annotations, spec map[string]any
	switch {
	case w.cronJob && !wake:
		annotations, spec = map[string]any{status.SuspendAnnotation: "false"}, map[string]any{"suspend": true}
	case w.cronJob:
		annotations, spec = map[string]any{status.SuspendAnnotation: nil}, map[string]any{"suspend": false}
	case !wake:
		annotations, spec = map[string]any{status.ReplicasAnnotation: fmt.Sprint(sleepReplicas)}, map[string]any{"replicas": 0}
	default:
		annotations, spec = map[string]any{status.ReplicasAnnotation: nil}, map[string]any{"replicas": sleepReplicas}
	}
	patch := []byte(nsmanwrite.MustJSON(map[string]any{"metadata": map[string]any{"resourceVersion": w.resourceVersion, "annotations": annotations}, "spec": spec}))
	var err error
	if w.cronJob {
		_, err = kube.BatchV1().CronJobs(namespace).Patch(ctx, w.name, types.MergePatchType, patch, metav1.PatchOptions{})
	} else {
		_, err = kube.AppsV1().Deployments(namespace).Patch(ctx, w.name, types.MergePatchType, patch, metav1.PatchOptions{})
	}
	if err != nil {
		return fmt.Errorf("patch %s/%s: %w", namespace, w.name, err)
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// floorWorkloadLists lists, cluster-wide and paged, each kind nsman puts to
// sleep, decoding of each object only what says whether it is awake, and
// fails if one is: what a minimal client reads to see that nothing woke.
// A kind the cluster does not serve, or the ServiceAccount may not list,
// answers as for nsman, and has nothing awake.
func floorWorkloadLists(ctx context.Context, cfg *rest.Config, kinds []probe.Selection) (string, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	var counts []string
	for _, sel := range kinds {
		resource := sel.Kind.Resource
		objects, awake := 0, 0
		next := ""
		for {
			req := kube.Discovery().RESTClient().Get().AbsPath(probe.ResourcePath(resource, metav1.NamespaceAll)...).Param("limit", fmt.Sprint(pageSize))
			if next != "" {
				req = req.Param("continue", next)
			}
			raw, err := req.DoRaw(ctx)
			if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
				break
			}
			if err != nil {
				return "", fmt.Errorf("list %s: %w", resource.GroupResource(), err)
			}
			var page struct {
				Metadata struct {
					Continue string `json:"continue"`
				} `json:"metadata"`
				Items []struct {
					Metadata struct {
						Annotations map[string]string `json:"annotations"`
					} `json:"metadata"`
					Spec workload.Spec `json:"spec"`
				} `json:"items"`
			}
			if err := json.Unmarshal(raw, &page); err != nil {
				return "", fmt.Errorf("list %s: %w", resource.GroupResource(), err)
			}
			for _, it := range page.Items {
				objects++
				awake += btoi(sel.Kind.Way.Awake(&it.Spec, it.Metadata.Annotations))
			}
			if next = page.Metadata.Continue; next == "" {
				break
			}
		}
		if awake > 0 {
			return "", fmt.Errorf("%d %s of %d awake", awake, resource.Resource, objects)
		}
		counts = append(counts, fmt.Sprintf("%d %s", objects, resource.Resource))
	}
	return strings.Join(counts, ", ") + ", none awake", nil
}

// The bounds of the SLEEP rule's targets (issue 33).
const (
	// sleepBound: the sweep that puts the namespaces to sleep, and the one
	// that wakes them, against their write floors.
	sleepBound = 1.5
	// asleepBound: a sweep while asleep against the read floor with the
	// workload lists.
	asleepBound = 1.3
)

// sleepRows are the SLEEP part's rows, found by label.
type sleepRows struct {
	sleep, sleepFloor, first, floor, lists, asleep, wake, wakeFloor measurement
}

func sleepRowsOf(rows rowSet) (sleepRows, int) {
	n := rows[0].N
	return sleepRows{
		sleep: rows.must(n, sleepSweepLabel(n)), sleepFloor: rows.must(n, sleepFloorLabel(n)),
		first: rows.must(n, firstAsleepLabel), floor: rows.must(n, readFloorLabel), lists: rows.must(n, sleepListsPrefix),
		asleep: rows.must(n, asleepLabel), wake: rows.must(n, wakeSweepLabel(n)), wakeFloor: rows.must(n, wakeFloorLabel(n)),
	}, n
}

// sleepTargets computes the SLEEP rule's targets.
func sleepTargets(rows rowSet) []target {
	if len(rows) == 0 {
		return nil
	}
	r, n := sleepRowsOf(rows)
	transition := func(what string, m, floor measurement) target {
		x := ratio(m.Wall, floor.Wall)
		return setAt(sleepMaxSize, target{N: n, Source: "33", Met: x <= sleepBound,
			What:     fmt.Sprintf("SLEEP: %s ≤ %.1f × its write floor", what, sleepBound),
			Measured: fmt.Sprintf("%s / %s = %.2f×", m.at(), floor.at(), x)})
	}
	x := ratio(r.asleep.Wall, r.lists.Wall)
	peak, at := peakRSS(rows, n)
	sameSleep, sameWake := sameWrites(r.sleep, r.sleepFloor, n), sameWrites(r.wake, r.wakeFloor, n)
	perNamespace := func(m measurement) int { _, each, _ := writesOf(m, n); return each }
	return []target{
		transition(fmt.Sprintf("sweep that puts %d namespaces to sleep", n), r.sleep, r.sleepFloor),
		setAt(sleepMaxSize, target{N: n, Source: "33", Met: x <= asleepBound,
			What: fmt.Sprintf("SLEEP: sweep while asleep ≤ %.1f × read floor incl. the workload lists", asleepBound),
			Measured: fmt.Sprintf("%s / %s = %.2f× (floor without them: %s, %.2f×)",
				r.asleep.at(), r.lists.at(), x, r.floor.at(), ratio(r.asleep.Wall, r.floor.Wall))}),
		{N: n, What: "SLEEP: zero writes in a sweep while asleep", Source: "33",
			Measured: fmt.Sprintf("%d (%s)", r.asleep.writes(), r.asleep.ref()), Met: r.asleep.writes() == 0},
		transition(fmt.Sprintf("sweep that wakes %d namespaces", n), r.wake, r.wakeFloor),
		{N: n, What: "SLEEP: writes per namespace of the sleep and the wake = their write floors'", Source: "33",
			Measured: fmt.Sprintf("sleep %d (%s) vs %d (%s), wake %d (%s) vs %d (%s)",
				perNamespace(r.sleep), r.sleep.ref(), perNamespace(r.sleepFloor), r.sleepFloor.ref(),
				perNamespace(r.wake), r.wake.ref(), perNamespace(r.wakeFloor), r.wakeFloor.ref()),
			Met: sameSleep == nil && sameWake == nil},
		{N: n, What: fmt.Sprintf("SLEEP: peak RSS ≤ %d MiB, over every nsman sweep", rssBoundMiB), Source: "33, OE",
			Measured: fmt.Sprintf("%s (%s)", mib(peak), at.ref()), Met: float64(peak)/1024 <= rssBoundMiB},
	}
}

// sleepMethod describes the SLEEP rule's part.
func sleepMethod(b *strings.Builder, rows rowSet) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	r, n := sleepRowsOf(rows)
	kinds := strings.TrimSuffix(strings.TrimPrefix(r.lists.What, sleepListsPrefix+" ("), ")")
	p("A fresh control plane of its own, at the largest size measured up to %d (N = %d). Seeded: N namespaces labelled\n", sleepMaxSize, n)
	p("`%s=on`, each with %d workloads, the Deployments %s of %d replica and the CronJob `%s` (no controller runs on the API\n",
		sleepLabel, sleepWorkloads, "`"+strings.Join(sleepDeployments, "` and `")+"`", sleepReplicas, sleepCronJob)
	p("tier to act on them); as many labelled `%s=off`, with the same workloads, for the write floors; and one rule,\n", sleepLabel)
	p("`%s/%s`, in its own namespace (nsman runs with `--trusted-namespaces %s`), over the first, with one policy: `TTL`\n", sleepRulesNamespace, sleepRuleName, sleepRulesNamespace)
	p("0 s → SLEEP, no selectors, with one window (UTC) open from an hour before the run to three hours after. Without selectors a SLEEP\n")
	p("puts to sleep every kind nsman lists (probe.Kinds.All: the known kinds and those with a scale subresource that discovery\n")
	p("finds and an access review, one per kind per sweep, asked side by side, says the ServiceAccount may patch; one the cluster does not serve, or the\n")
	p("ServiceAccount may not list, answers with an error nsman passes over; the reviews are counted as reads): here %s.\n\n", kinds)
	p("Then, %d times over: nsman's sweep that puts every namespace to sleep (per namespace: the claim, a list of each kind in it, a\n", sleepRounds)
	p("patch per workload and the record); the sleep write floor; nsman's first sweep while asleep, which finds the rule's status\n")
	p("counting the namespaces fired, not asleep, and so reads what is awake namespace by namespace for the first %d\n", probe.AwakeIndexAfter)
	p("(probe.AwakeIndexAfter), then once per kind, cluster-wide; the read floor; the read floor with the workload lists; a sweep\n")
	p("while asleep, which, the rule's status counting more than %d asleep, lists each kind once, cluster-wide, from the first, the\n", probe.AwakeIndexAfter)
	p("kinds side by side and beside the namespaces' listing (probe.Awake.Prefetch); then\n")
	p("the rule's window moved to open five hours from now; nsman's sweep that wakes every namespace; the wake write floor; the\n")
	p("window opened again. The rows are the median runs; the notes list every run. The generator fails the run unless each sleep\n")
	p("and wake sweep fired on every namespace and wrote per namespace what its write floor writes (audit log), the sweeps while\n")
	p("asleep found every namespace asleep and wrote nothing (the first may record the rule's status), and every workload was\n")
	p("asleep, or awake as seeded, after each sweep that should leave it so.\n\n")
	p("The floors are minimal client-go code, as the ServiceAccount, unthrottled, with %d workers, handed their targets (the\n", floorConcurrency)
	p("namespaces `%s=off` and their workloads, listed untimed):\n\n", sleepLabel)
	p("- the sleep write floor, per namespace: the claim (a merge patch of the namespace, conditional on its listed resourceVersion,\n")
	p("  that sets the annotation `%s<digest of the rule UID>` to a record holding the claim), one merge patch per\n", status.PairAnnotationPrefix)
	p("  workload, conditional on its listed resourceVersion (`spec.replicas: 0` with `%s`,\n", status.ReplicasAnnotation)
	p("  `spec.suspend: true` with `%s`), and the record (a JSON patch that tests that the\n", status.SuspendAnnotation)
	p("  annotation still holds the claim and replaces it with the outcome): %d writes, the requests nsman sends.\n", sleepWorkloads+2)
	p("- the wake write floor, on the namespaces the sleep write floor put to sleep: the same claim, one patch per workload that\n")
	p("  restores its replicas or resumes it and removes its record, and the record.\n")
	p("- the read floor lists the managers and the namespaces as in \"Managers\"; the next row adds one paged list (page size %d) of\n", pageSize)
	p("  each of those kinds, cluster-wide, decoding of each object its replicas, suspend or pause alone (it fails if one is awake): what a\n")
	p("  client reads to see that nothing woke.\n\n")
}

// sleepAnalysis writes what the SLEEP rule's part says.
func sleepAnalysis(b *strings.Builder, rows rowSet) {
	if len(rows) == 0 {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	r, n := sleepRowsOf(rows)
	transition := func(what string, m, floor measurement) { transitionAnalysis(b, n, what, m, floor) }
	p("**A SLEEP rule over %d namespaces.** ", n)
	transition("put them to sleep", r.sleep, r.sleepFloor)
	p("The first sweep while asleep took %s and made %d requests (%s); the next took %s: %.2f× the read floor with the workload\n",
		r.first.at(), r.first.total(), describe(r.first.Audited), r.asleep.at(), ratio(r.asleep.Wall, r.lists.Wall))
	p("lists (%s) and %.2f× the read floor (%s); it made %d requests, %d of them writes, where the floor with the workload lists made\n",
		r.lists.at(), ratio(r.asleep.Wall, r.floor.Wall), r.floor.ref(), r.asleep.total(), r.asleep.writes())
	p("%d (more: %s).\n", r.lists.total(), cmpOr(describe(moreRequests(r.asleep, r.lists)), "none"))
	transition("woke them", r.wake, r.wakeFloor)
	p("\n")
}

// transitionAnalysis writes what m, a sweep over n namespaces that what
// (put them to sleep, woke them), says against floor, its write floor:
// the times, and the writes per namespace and the requests beyond the
// floor's.
func transitionAnalysis(b *strings.Builder, n int, what string, m, floor measurement) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	each, _, besides := writesOf(m, n)
	floorEach, _, _ := writesOf(floor, n)
	p("The sweep that %s took %s: %.2f× its write floor (%s).\nIt made %d requests, %d of them writes: per namespace %s",
		what, m.at(), ratio(m.Wall, floor.Wall), floor.at(), m.total(), m.writes(), cmpOr(describe(each), "none"))
	if len(besides) > 0 {
		p(", and %s besides", describe(besides))
	}
	p(", where the floor writes %s;\nits requests beyond the floor's: %s.\n", cmpOr(describe(floorEach), "none"), cmpOr(describe(moreRequests(m, floor)), "none"))
}
