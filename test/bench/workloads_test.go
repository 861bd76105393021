package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// The fat-workloads row of the hostile tenant's part (issue 44, point 2):
// a tenant's Deployments of many small containers, the shape that costs
// most decoded, under a SLEEP and a SCALE_DOWN manager of its own, beside a
// rule that deletes namespaces, in a control plane of its own.
const (
	// fatSleepNamespace and fatScaleNamespace are the tenant's namespaces,
	// each with fatDeployments Deployments of fatContainers containers and
	// a manager: SLEEP in the one, SCALE_DOWN in the other.
	fatSleepNamespace, fatScaleNamespace = "fat-sleep", "fat-scale"
	fatDeployments                       = 40
	fatContainers                        = 7000
	// fatRuleNamespaces is how many namespaces the rule beside them
	// deletes.
	fatRuleNamespaces = 20
	fatRulesNamespace = "fat-rules"
	fatRulePrefix     = "fat-rule"
	// fatOnly is what NSMAN_BENCH_ONLY names to run this row alone.
	fatOnly = "hostile-workloads"
	// fatClaimTTL is the sweep's --claim-ttl: on this machine the API
	// server took 1.5 to 2 s to patch one such Deployment, and 40 in a
	// namespace outlast the default claim's 55 s of action (a later sweep
	// would complete the rest); the row measures one sweep doing all.
	fatClaimTTL = "5m"
)

// fatSweepLabel is the label of the sweep measured.
func fatSweepLabel() string {
	return fmt.Sprintf("nsman sweep, fat workloads (%d + %d Deployments of %d containers, under SLEEP and SCALE_DOWN) + rule DELETE over %d namespaces",
		fatDeployments, fatDeployments, fatContainers, fatRuleNamespaces)
}

// measureFatWorkloads starts a control plane, seeds the tenant's fat
// Deployments, its two managers and the rule, and measures one sweep,
// which must put every Deployment to zero and delete the rule's
// namespaces.
func measureFatWorkloads(t *testing.T, bin string) ([]measurement, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Minute)
	defer cancel()
	s := startSession(ctx, t, bin, 2*fatDeployments)
	defer s.c.Stop()

	began := time.Now()
	stored, err := s.seed.fatWorkloads(ctx)
	if err != nil {
		t.Fatalf("seed: %v", err)
	}
	if err := s.seed.namespaces(ctx, fatRulePrefix, map[string]string{setLabel: fatRulePrefix, ruleLabel: "on"}, fatRuleNamespaces,
		func(int) corev1.PodPhase { return corev1.PodRunning }); err != nil {
		t.Fatalf("seed: %v", err)
	}
	if err := s.seed.namespace(ctx, fatRulesNamespace, nil); err != nil {
		t.Fatal(err)
	}
	rule := newManager(fatRulesNamespace, ruleName, map[string]any{
		"namespaceSelector": map[string]any{"matchLabels": map[string]any{ruleLabel: "on"}},
		"policies":          []any{deletePolicy("ttl", ttlDue)},
	})
	if _, err := s.env.Dynamic.Resource(cluster.ManagerResource).Namespace(fatRulesNamespace).Create(ctx, rule, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create rule: %v", err)
	}
	s.step("seeded %d + %d Deployments of %d containers (one listed: %d bytes) and the rule over %d namespaces in %s",
		fatDeployments, fatDeployments, fatContainers, stored, fatRuleNamespaces, time.Since(began).Round(time.Millisecond))

	if _, err := s.audit.next(ctx); err != nil {
		t.Fatal(err)
	}
	m := s.sweepRow(fatSweepLabel(), "--trusted-namespaces", fatRulesNamespace, "--claim-ttl", fatClaimTTL)
	s.rows[len(s.rows)-1].Note = fmt.Sprintf("one Deployment listed: %d bytes", stored)
	if got := m.States[report.StateFired]; got != 2+fatRuleNamespaces {
		t.Errorf("fat workloads: %d fired, want the SLEEP, the SCALE_DOWN and the rule's %d namespaces (%v)", got, fatRuleNamespaces, m.States)
	}
	for _, ns := range []string{fatSleepNamespace, fatScaleNamespace} {
		if m, err := s.env.Dynamic.Resource(cluster.ManagerResource).Namespace(ns).Get(ctx, "nights", metav1.GetOptions{}); err == nil {
			result, _, _ := unstructured.NestedString(m.Object, "status", "lastAction", "result")
			message, _, _ := unstructured.NestedString(m.Object, "status", "lastAction", "message")
			s.step("%s/nights: %s, %s", ns, result, message)
		}
		for i := range fatDeployments {
			scale, err := s.c.Admin.AppsV1().Deployments(ns).GetScale(ctx, fatName(i), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if scale.Spec.Replicas != 0 {
				t.Errorf("fat workloads: %s/%s at %d replicas after the sweep, want 0", ns, fatName(i), scale.Spec.Replicas)
			}
		}
	}
	return s.rows, s.version
}

// fatName names the tenant's Deployment i.
func fatName(i int) string { return fmt.Sprintf("fat-%02d", i) }

// fatWorkloads seeds the tenant's two namespaces, their Deployments and
// managers, and returns the size of one Deployment as a list gives it.
func (s seeder) fatWorkloads(ctx context.Context) (int, error) {
	containers := make([]corev1.Container, fatContainers)
	for i := range containers {
		containers[i] = corev1.Container{Name: fmt.Sprintf("c%04d", i), Image: "i",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m"), corev1.ResourceMemory: resource.MustParse("1Mi")}}}
	}
	managers := map[string]map[string]any{
		fatSleepNamespace: sleepPolicy(true),
		fatScaleNamespace: {"name": "scale", "condition": map[string]any{"type": policy.ConditionTTL, "params": map[string]any{"ttlSeconds": int64(0)}},
			"action": map[string]any{"type": policy.ActionScaleDown, "params": map[string]any{"selectors": []any{map[string]any{"kind": "Deployment"}}}}},
	}
	for _, ns := range []string{fatSleepNamespace, fatScaleNamespace} {
		if err := s.namespace(ctx, ns, map[string]string{setLabel: ns}); err != nil {
			return 0, err
		}
		if err := inParallel(ctx, 4, fatDeployments, func(ctx context.Context, i int) error {
			labels := map[string]string{"app": fatName(i)}
			d := &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fatName(i)},
				Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: containers}}},
			}
			return create(ctx, func() error {
				_, err := s.kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
				return err
			})
		}); err != nil {
			return 0, fmt.Errorf("create deployments in %s: %w", ns, err)
		}
		m := newManager(ns, "nights", map[string]any{"namespace": ns, "policies": []any{managers[ns]}})
		m.SetLabels(map[string]string{setLabel: ns})
		if err := create(ctx, func() error {
			_, err := s.dyn.Resource(cluster.ManagerResource).Namespace(ns).Create(ctx, m, metav1.CreateOptions{})
			return err
		}); err != nil {
			return 0, fmt.Errorf("create manager in %s: %w", ns, err)
		}
	}
	raw, err := s.kube.AppsV1().RESTClient().Get().Namespace(fatSleepNamespace).Resource("deployments").Name(fatName(0)).DoRaw(ctx)
	return len(raw), err
}

// fatTargets computes the fat-workloads row's target.
func fatTargets(hostile rowSet) []target {
	m, ok := hostile.get(2*fatDeployments, fatSweepLabel())
	if !ok {
		return nil
	}
	return []target{{N: 2 * fatDeployments, Source: "44", Met: m.MaxRSS > 0 && m.MaxRSS <= hostileRSSBoundMiB<<10,
		What:     fmt.Sprintf("fat workloads: peak RSS ≤ %d MiB (the chart's limit is 128Mi)", hostileRSSBoundMiB),
		Measured: fmt.Sprintf("%s (%s)", mib(m.MaxRSS), m.ref())}}
}

// fatMethod describes the fat-workloads row.
func fatMethod(b *strings.Builder) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("The fat-workloads row (issue 44), in a fresh control plane of its own: two tenant namespaces, `%s` and `%s`, each with\n", fatSleepNamespace, fatScaleNamespace)
	p("%d Deployments of 1 replica and %d containers, each requesting 1m CPU and 1Mi (the row's note gives one's size as listed),\n", fatDeployments, fatContainers)
	p("and a manager of its own, TTL 0 → SLEEP (no selectors, its window open) in the one, TTL 0 → SCALE_DOWN of its Deployments\n")
	p("in the other; beside them a rule in `%s` (trusted) with `TTL` 0 → DELETE over %d namespaces. One sweep is measured, with\n", fatRulesNamespace, fatRuleNamespaces)
	p("`--claim-ttl %s` (the API server takes seconds to patch each such Deployment: 40 outlast the default claim's 55 s of action,\n", fatClaimTTL)
	p("where a later sweep completes the rest): it must scale every Deployment to zero and delete the rule's namespaces, within the\n")
	p("peak RSS of the target.\n\n")
}

// The fat-workloads row renders in the hostile tenant's section, described
// there, and its target is met or missed by the sweep's peak RSS; run
// alone, the section describes it alone.
func TestRenderFatWorkloads(t *testing.T) {
	fat := func(rss int64) measurement {
		return measurement{N: 2 * fatDeployments, What: fatSweepLabel(), Wall: 12 * time.Second, MaxRSS: rss,
			Audited: map[string]int{"list deployments": 4, "patch deployments": 2 * fatDeployments, "delete namespaces": fatRuleNamespaces},
			States:  map[report.State]int{report.StateFired: 2 + fatRuleNamespaces}}
	}
	tree := treeState{Commit: strings.Repeat("e", 40), Describe: "eeeeeee"}
	rep := syntheticReport(map[string]int{"delete namespaces": 1000}, tree)
	rep.Hostile = append(rep.Hostile, fat(60<<10))
	doc := render(rep)
	sec := section(doc, "## A hostile tenant (issue 31)")
	for _, want := range []string{"80 Running pods (`app=web`)", "each with\n40 Deployments of 1 replica and 7000 containers", "| 80 | " + fatSweepLabel() + " | 12.00 s |"} {
		if !strings.Contains(sec, want) {
			t.Errorf("hostile section lacks %q:\n%s", want, sec)
		}
	}
	what := "fat workloads: peak RSS ≤ 96 MiB (the chart's limit is 128Mi)"
	if row := targetRow(t, doc, 80, what); !strings.Contains(row, "| 60.0 MiB (#") || !strings.Contains(row, "| yes | 44 |") {
		t.Errorf("target row %q, want 60.0 MiB met", row)
	}
	rep.Hostile = []measurement{fat(941 << 10)}
	doc = render(rep)
	if row := targetRow(t, doc, 80, what); !strings.Contains(row, "| **no** | 44 |") {
		t.Errorf("target row %q at 941 MiB, want it missed", row)
	}
	if sec := section(doc, "## A hostile tenant (issue 31)"); strings.Contains(sec, "80 Running pods") {
		t.Errorf("the row alone: the section describes the hostile tenant's other row:\n%s", sec)
	}
}
