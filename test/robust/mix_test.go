package robust

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// mix is a set of managers labelled nsman.test/crash=run: due ones of each
// action (DELETE, SCALE_DOWN of a 2-replica Deployment, WEBHOOK to recv, as
// Service "sink" of the manager's own namespace: the managers are tenants'),
// idle ones that are not due, and SLEEP ones whose window is open now, each
// over a workload of each way (see makeSleepers). Its rules, in a trusted
// namespace, call recv at its loopback address.
type mix struct {
	run  string
	due  map[string]string // namespace -> action
	idle []string
	// sleepers are the namespaces of the SLEEP managers, each the
	// manager's own.
	sleepers []string
	// ruled maps each namespace a rule of the mix acts on to the action;
	// rules maps each rule's name to its uid.
	ruled map[string]string
	rules map[string]types.UID
	// params are the namespaces of the rule with every parameter of a
	// sleep (see seedParams).
	params []string
	// warned are the subjects whose warnings are due (see seedWarned).
	warned warnedSubjects
}

// ruleHome is where the mixes' rules live: a namespace trusted by default.
const ruleHome = "namespace-manager"

// ensureRuleHome creates ruleHome unless it exists.
func ensureRuleHome(t *testing.T) {
	t.Helper()
	if _, err := shared.Admin.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ruleHome}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// seedMix creates n managers, one in each of n namespaces, cycling through
// the three actions and an idle one, and a SLEEP manager for every eight
// of them (one at least).
func seedMix(t *testing.T, e *nsmantest.Env, recv *nsmantest.Receiver, run string, n int) mix {
	t.Helper()
	m := mix{run: run, due: map[string]string{}}
	for i := range n {
		ns := shared.Namespace(t)
		action := []string{"DELETE", "SCALE_DOWN", "WEBHOOK", "idle"}[i%4]
		policy, ttl := map[string]any{"type": action}, int64(0)
		switch action {
		case "idle":
			m.idle = append(m.idle, ns)
			policy, ttl = map[string]any{"type": "DELETE"}, 3600
		case "WEBHOOK":
			policy["params"] = map[string]any{"url": recv.ServiceURL(t, shared.Admin, ns, "sink") + "/" + ns}
		case "SCALE_DOWN":
			createDeployment(t, ns, 2)
		}
		if action != "idle" {
			m.due[ns] = action
		}
		createManager(t, e, ns, run, ttl, policy)
	}
	for range (n + 7) / 8 {
		ns := shared.Namespace(t)
		createSleepers(t, e, ns)
		createManagerWith(t, e, ns, run, sleepPolicy(-time.Hour, 2*time.Hour))
		m.sleepers = append(m.sleepers, ns)
	}
	m.seedRules(t, e, recv, allRules)
	return m
}

// seedSleepMix creates a mix of SLEEP, its window open now, and of
// warnings alone: one manager and one rule over one namespace, each over
// a workload of each way (see makeSleepers), a rule with every parameter
// over one more (see seedParams), and a manager and a rule whose warnings
// are due, each over one more (see seedWarned). Its sweeps are short, so
// that a sweep can be killed at each of their requests.
func seedSleepMix(t *testing.T, e *nsmantest.Env, run string) mix {
	t.Helper()
	m := mix{run: run, due: map[string]string{}}
	ns := shared.Namespace(t)
	createSleepers(t, e, ns)
	createManagerWith(t, e, ns, run, sleepPolicy(-time.Hour, 2*time.Hour))
	m.sleepers = append(m.sleepers, ns)
	m.seedRules(t, e, nil, []ruleSpec{{"SLEEP", 1}})
	m.seedParams(t, e)
	m.warned = seedWarned(t, e, map[string]any{"nsman.test/crash": run}, 1, 1, "rule-warn-"+run)
	return m
}

// sleepPolicy is a SLEEP policy "nights" whose one window, in UTC, is open
// from from to to after now (negative: before): a window around now holds
// at once, one ahead of now does not.
func sleepPolicy(from, to time.Duration) map[string]any {
	now := time.Now().UTC()
	return map[string]any{
		"name":      "nights",
		"condition": map[string]any{"type": "TTL", "params": map[string]any{"ttlSeconds": int64(0)}},
		"windows":   []any{map[string]any{"from": now.Add(from).Format("15:04"), "to": now.Add(to).Format("15:04"), "timeZone": "UTC"}},
		"action":    map[string]any{"type": "SLEEP"},
	}
}

// createSleepers creates what a SLEEP puts to sleep in ns (see
// makeSleepers).
func createSleepers(t *testing.T, e *nsmantest.Env, ns string) {
	t.Helper()
	if err := makeSleepers(t.Context(), e, ns); err != nil {
		t.Fatal(err)
	}
}

// makeSleepers creates, as admin, one workload in ns for each way nsman
// puts one to sleep: Deployment "web" of 2 replicas and Rollout "canary" of
// 3 (a kind found by discovery, test/fixtures/crds), scaled to 0; CronJob
// "report", running, suspended; ScaledObject "queue", not paused, paused.
func makeSleepers(ctx context.Context, e *nsmantest.Env, ns string) error {
	if _, err := shared.Admin.AppsV1().Deployments(ns).Create(ctx, nsmantest.Deployment("web", 2), metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := shared.Admin.BatchV1().CronJobs(ns).Create(ctx, cronJob(), metav1.CreateOptions{}); err != nil {
		return err
	}
	for res, obj := range map[schema.GroupVersionResource]map[string]any{
		nsmantest.ScaledObjectResource: {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": map[string]any{"name": "queue"},
			"spec": map[string]any{"scaleTargetRef": map[string]any{"name": "web"}}},
		nsmantest.RolloutResource: {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "metadata": map[string]any{"name": "canary"},
			"spec": map[string]any{"replicas": int64(3)}},
	} {
		if _, err := e.Dynamic.Resource(res).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// asleepLine and awakeLine are sleepersLine of the workloads of
// makeSleepers put to sleep, each with its record, and awake as made.
const (
	asleepLine = `web 0 "2", report true "false", queue "0" "", canary 0 "3"`
	awakeLine  = `web 2 -, report false -, queue - -, canary 3 -`
)

// sleepersLine says what makeSleepers made in ns is at now and the record
// nsman keeps on each ("-": none): replicas, suspend, KEDA's
// paused-replicas, replicas.
func sleepersLine(t *testing.T, e *nsmantest.Env, ns string) string {
	t.Helper()
	ctx := t.Context()
	d, err := shared.Admin.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cj, err := shared.Admin.BatchV1().CronJobs(ns).Get(ctx, "report", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	so, err := e.Dynamic.Resource(nsmantest.ScaledObjectResource).Namespace(ns).Get(ctx, "queue", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ro, err := e.Dynamic.Resource(nsmantest.RolloutResource).Namespace(ns).Get(ctx, "canary", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	value := func(annotations map[string]string, key string) string {
		if v, ok := annotations[key]; ok {
			return strconv.Quote(v)
		}
		return "-"
	}
	replicas, _, _ := unstructured.NestedInt64(ro.Object, "spec", "replicas")
	return fmt.Sprintf("web %d %s, report %t %s, queue %s %s, canary %d %s",
		*d.Spec.Replicas, value(d.Annotations, status.ReplicasAnnotation),
		*cj.Spec.Suspend, value(cj.Annotations, status.SuspendAnnotation),
		value(so.GetAnnotations(), status.KedaPausedReplicas), value(so.GetAnnotations(), status.PausedReplicasAnnotation),
		replicas, value(ro.GetAnnotations(), status.ReplicasAnnotation))
}

// cronJob is CronJob "report", running.
func cronJob() *batchv1.CronJob {
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "report"},
		Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", Suspend: ptr.To(false), JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "main", Image: "registry.invalid/report:1"}}}},
		}}},
	}
}

// ruleSpec is a rule of a mix: its action, and over how many namespaces.
type ruleSpec struct {
	action string
	n      int
}

// allRules are the rules of a whole mix: a WEBHOOK rule over two
// namespaces, a DELETE rule over one, a SCALE_DOWN rule over one with a
// 2-replica Deployment, and a SLEEP rule whose window is open now over one
// with a workload of each way (see makeSleepers).
var allRules = []ruleSpec{{"WEBHOOK", 2}, {"DELETE", 1}, {"SCALE_DOWN", 1}, {"SLEEP", 1}}

// seedRules adds rules to the mix, each due on namespaces of its own.
func (m *mix) seedRules(t *testing.T, e *nsmantest.Env, recv *nsmantest.Receiver, rules []ruleSpec) {
	t.Helper()
	ctx := t.Context()
	ensureRuleHome(t)
	m.ruled, m.rules = map[string]string{}, map[string]types.UID{}
	for _, r := range rules {
		name := strings.ToLower("rule-" + r.action + "-" + m.run)
		for range r.n {
			ns := shared.Namespace(t)
			patch := fmt.Sprintf(`{"metadata":{"labels":{"nsman.test/rule":%q}}}`, name)
			if _, err := shared.Admin.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			switch r.action {
			case "SCALE_DOWN":
				createDeployment(t, ns, 2)
			case "SLEEP":
				createSleepers(t, e, ns)
			}
			m.ruled[ns] = r.action
		}
		action := map[string]any{"type": r.action}
		if r.action == "WEBHOOK" {
			action["params"] = map[string]any{"url": recv.URL + "/" + name}
		}
		policy := map[string]any{
			"name":      "act when due",
			"condition": map[string]any{"type": "TTL", "params": map[string]any{"ttlSeconds": int64(0)}},
			"action":    action,
		}
		if r.action == "SLEEP" {
			policy = sleepPolicy(-time.Hour, 2*time.Hour)
		}
		rule := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "k8s.consol.de/v1beta1",
			"kind":       "NamespaceManager",
			"metadata":   map[string]any{"namespace": ruleHome, "name": strings.ReplaceAll(name, "_", "-"), "labels": map[string]any{"nsman.test/crash": m.run}},
			"spec": map[string]any{
				"namespaceSelector": map[string]any{"matchLabels": map[string]any{"nsman.test/rule": name}},
				"policies":          []any{policy},
			},
		}}
		created, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(ruleHome).Create(ctx, rule, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m.rules[created.GetName()] = created.GetUID()
		for ns, action := range m.ruled {
			if action == r.action {
				m.ruled[ns] = action + " " + string(created.GetUID())
			}
		}
	}
}

// ruledAction splits a ruled entry into the action and the rule's uid.
func ruledAction(v string) (string, types.UID) {
	action, uid, _ := strings.Cut(v, " ")
	return action, types.UID(uid)
}

// checkConverged checks that every due manager's action is done and the
// manager deactivated, each webhook under one Idempotency-Key, and nothing
// idle touched.
func (m mix) checkConverged(t *testing.T, e *nsmantest.Env, recv *nsmantest.Receiver, res nsmantest.Result) {
	t.Helper()
	keys := map[string]map[string]bool{}
	for _, d := range recv.Deliveries() {
		var body struct{ Namespace string }
		if json.Unmarshal(d.Body, &body) == nil {
			if keys[body.Namespace] == nil {
				keys[body.Namespace] = map[string]bool{}
			}
			keys[body.Namespace][d.Header.Get("Idempotency-Key")] = true
		}
	}
	for ns, action := range m.due {
		// A manager that deleted its own namespace goes with it, not
		// deactivated; every other one is deactivated.
		if action == "DELETE" {
			if !e.NamespaceGoneOrTerminating(t, ns) {
				t.Errorf("namespace %s not deleted", ns)
			}
			continue
		}
		if !e.Deactivated(t, ns, ns) {
			t.Errorf("%s manager %s not converged: %+v", action, ns, res.Entry(t, ns, ns))
		}
		checkActed(t, e, action, ns, keys[ns])
	}
	for _, ns := range m.idle {
		if e.Deactivated(t, ns, ns) || e.NamespaceGoneOrTerminating(t, ns) {
			t.Errorf("manager %s was not due but was acted on", ns)
		}
	}
	for _, ns := range m.sleepers {
		if st := managerProgress(t, e, ns); !settled(st) || st.Asleep == nil || st.Asleep.Policy != "nights" || st.Asleep.Partial || e.Deactivated(t, ns, ns) {
			t.Errorf("SLEEP manager %s not converged asleep (deactivated %t): status %+v asleep %+v; entry %+v", ns, e.Deactivated(t, ns, ns), st, st.Asleep, res.Entry(t, ns, ns))
		}
		checkActed(t, e, "SLEEP", ns, nil)
	}
	for ns, v := range m.ruled {
		action, uid := ruledAction(v)
		if action == "DELETE" {
			if !e.NamespaceGoneOrTerminating(t, ns) {
				t.Errorf("rule: namespace %s not deleted", ns)
			}
			continue
		}
		st, err := pairProgress(t, ns, uid)
		if err != nil || !settled(st) || action == "SLEEP" && (st.Asleep == nil || st.Asleep.Partial) {
			t.Errorf("rule %s on %s not converged: record %+v asleep %+v (%v)", action, ns, st, st.Asleep, err)
		}
		checkActed(t, e, "rule "+action, ns, keys[ns])
	}
	m.checkParams(t, e, true, paramsAsleepLine)
}

// settled reports whether p records an action that succeeded, and no claim.
func settled(p status.Progress) bool {
	return p.LastAction != nil && p.LastAction.Result == report.ResultSucceeded && p.Claim == nil
}

// managerProgress is what the status of the manager named ns in ns records.
func managerProgress(t *testing.T, e *nsmantest.Env, ns string) status.Progress {
	t.Helper()
	var st status.Status
	if raw, ok := e.Manager(t, ns, ns).Object["status"]; ok {
		data, err := json.Marshal(raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &st); err != nil {
			t.Fatalf("status of %s: %v", ns, err)
		}
	}
	return st.Progress
}

// pairProgress is the record the rule of uid keeps on namespace ns.
func pairProgress(t *testing.T, ns string, uid types.UID) (status.Progress, error) {
	t.Helper()
	obj, err := shared.Admin.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var st status.PairStatus
	err = json.Unmarshal([]byte(obj.Annotations[status.PairAnnotation(uid)]), &st)
	return st.Progress, err
}

// sleeping are the namespaces of the mix that a SLEEP acts on, its
// managers' and its rule's.
func (m mix) sleeping() []string {
	out := slices.Clone(m.sleepers)
	for ns, v := range m.ruled {
		if action, _ := ruledAction(v); action == "SLEEP" {
			out = append(out, ns)
		}
	}
	return out
}

// wakeUp moves the windows of the mix's SLEEP managers and rule away from
// now: their policies no longer hold, and the next sweep wakes them.
func (m mix) wakeUp(t *testing.T, e *nsmantest.Env) {
	t.Helper()
	patch := fmt.Appendf(nil, `{"spec":{"policies":[%s]}}`, write.MustJSON(sleepPolicy(3*time.Hour, 4*time.Hour)))
	// The rule with every parameter keeps them: a wake takes back the
	// patches the policy names.
	params := fmt.Appendf(nil, `{"spec":{"policies":[%s]}}`, write.MustJSON(sleepParamsPolicy(3*time.Hour, 4*time.Hour)))
	targets := map[string]string{} // manager name -> its namespace
	for _, ns := range m.sleepers {
		targets[ns] = ns
	}
	for name := range m.rules {
		if strings.HasPrefix(name, "rule-sleep-") || isParamsRule(name) {
			targets[name] = ruleHome
		}
	}
	for name, ns := range targets {
		body := patch
		if isParamsRule(name) {
			body = params
		}
		if _, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(ns).Patch(t.Context(), name, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// checkAwake checks that every SLEEP of the mix woke: its workloads as
// before the sleep, without records, its manager's status or its rule's
// record awake and settled, no manager deactivated.
func (m mix) checkAwake(t *testing.T, e *nsmantest.Env, res nsmantest.Result) {
	t.Helper()
	for _, ns := range m.sleepers {
		if st := managerProgress(t, e, ns); !settled(st) || st.Asleep != nil || e.Deactivated(t, ns, ns) {
			t.Errorf("SLEEP manager %s not converged awake (deactivated %t): status %+v asleep %+v; entry %+v", ns, e.Deactivated(t, ns, ns), st, st.Asleep, res.Entry(t, ns, ns))
		}
	}
	for ns, v := range m.ruled {
		if action, uid := ruledAction(v); action == "SLEEP" {
			if st, err := pairProgress(t, ns, uid); err != nil || !settled(st) || st.Asleep != nil {
				t.Errorf("rule SLEEP on %s not converged awake: record %+v asleep %+v (%v)", ns, st, st.Asleep, err)
			}
		}
	}
	for _, ns := range m.sleeping() {
		if got := sleepersLine(t, e, ns); got != awakeLine {
			t.Errorf("woken workloads in %s: %s, want %s", ns, got, awakeLine)
		}
	}
	m.checkParams(t, e, false, paramsAwakeLine)
}

// checkActed checks what a converged SCALE_DOWN, SLEEP or WEBHOOK left in
// ns: the Deployment at zero with its count recorded (a SLEEP's workloads
// all asleep with their records), or one Idempotency-Key.
func checkActed(t *testing.T, e *nsmantest.Env, action, ns string, keys map[string]bool) {
	t.Helper()
	switch {
	case strings.HasSuffix(action, "SLEEP"):
		if got := sleepersLine(t, e, ns); got != asleepLine {
			t.Errorf("%s: workloads in %s: %s, want %s", action, ns, got, asleepLine)
		}
	case strings.HasSuffix(action, "SCALE_DOWN"):
		d, err := shared.Admin.AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *d.Spec.Replicas != 0 || d.Annotations[status.ReplicasAnnotation] != "2" {
			t.Errorf("%s: deployment in %s: replicas %d, record %q", action, ns, *d.Spec.Replicas, d.Annotations[status.ReplicasAnnotation])
		}
	case strings.HasSuffix(action, "WEBHOOK"):
		if len(keys) != 1 {
			t.Errorf("%s for %s delivered with keys %v, want exactly one key", action, ns, keys)
		}
	}
}
