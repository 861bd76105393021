package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/reclaim"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// The hostile tenant's part (issue 31): one tenant makes its objects as
// large as the API server takes, beside a rule that deletes many
// namespaces, in a control plane of its own.
const (
	// hostileNamespace is the tenant's namespace.
	hostileNamespace = "hostile"
	// hostilePods and hostileJobs are its pods (Running, not what its
	// managers look for) and its Jobs (never finished, which keep its
	// managers waiting), each of about hostileObjectBytes.
	hostilePods, hostileJobs = 80, 80
	hostileObjectBytes       = 1_000_000
	// hostileManagers are its PODS_SUCCEED managers, each of about
	// hostileManagerBytes (an annotation).
	hostileManagers     = 300
	hostileManagerBytes = 200 << 10
	// hostileRuleNamespaces is how many namespaces the rule deletes, past
	// reclaim.ReclaimIndexAfter: what they free is read from the cluster-wide
	// list of pods, the tenant's among them.
	hostileRuleNamespaces = 40
	// hostileRulesNamespace holds the rule; nsman runs with it trusted.
	hostileRulesNamespace = "hostile-rules"
	hostileRulePrefix     = "hostile-rule"
	// hostileRSSBoundMiB: the sweep's peak RSS, under the chart's limit of
	// 128Mi (issue 31).
	hostileRSSBoundMiB = 96
)

// hostileSweepLabel is the label of the sweep measured.
func hostileSweepLabel() string {
	return fmt.Sprintf("nsman sweep, hostile tenant (%d pods, %d Jobs of 1 MB, %d managers of 200 KiB) + rule DELETE over %d namespaces",
		hostilePods, hostileJobs, hostileManagers, hostileRuleNamespaces)
}

// bulk is n bytes of container arguments: an object's bulk where the 256
// KiB of its annotations do not cap it.
func bulk(n int) []string {
	return []string{strings.Repeat("x", n/2), strings.Repeat("y", n-n/2)}
}

// measureHostile starts a control plane, seeds the hostile tenant and the
// rule, and measures one sweep, which must leave the tenant's managers
// waiting and delete the rule's namespaces.
func measureHostile(t *testing.T, bin string) ([]measurement, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Minute)
	defer cancel()
	s := startSession(ctx, t, bin, hostileManagers)
	defer s.c.Stop()

	began := time.Now()
	if err := s.seed.hostile(ctx); err != nil {
		t.Fatalf("seed: %v", err)
	}
	if err := s.seed.namespaces(ctx, hostileRulePrefix, map[string]string{setLabel: hostileRulePrefix, ruleLabel: "on"}, hostileRuleNamespaces,
		func(int) corev1.PodPhase { return corev1.PodRunning }); err != nil {
		t.Fatalf("seed: %v", err)
	}
	if err := s.seed.namespace(ctx, hostileRulesNamespace, nil); err != nil {
		t.Fatal(err)
	}
	rule := newManager(hostileRulesNamespace, ruleName, map[string]any{
		"namespaceSelector": map[string]any{"matchLabels": map[string]any{ruleLabel: "on"}},
		"policies":          []any{deletePolicy("ttl", ttlDue)},
	})
	if _, err := s.env.Dynamic.Resource(cluster.ManagerResource).Namespace(hostileRulesNamespace).Create(ctx, rule, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create rule: %v", err)
	}
	s.step("seeded the hostile tenant and the rule over %d namespaces in %s", hostileRuleNamespaces, time.Since(began).Round(time.Millisecond))

	if _, err := s.audit.next(ctx); err != nil {
		t.Fatal(err)
	}
	m := s.sweepRow(hostileSweepLabel(), "--trusted-namespaces", hostileRulesNamespace)
	if got := m.States[report.StateWaiting]; got != hostileManagers {
		t.Errorf("hostile tenant: %d waiting, want its %d managers (%v)", got, hostileManagers, m.States)
	}
	if got := m.States[report.StateFired]; got != hostileRuleNamespaces {
		t.Errorf("hostile tenant: the rule fired on %d namespaces, want %d (%v)", got, hostileRuleNamespaces, m.States)
	}
	// What the row is for: the managers' checks read the Jobs, and what
	// the DELETEs free is read from the cluster-wide lists.
	if m.count("list", "jobs") == 0 || m.count("list", "persistentvolumeclaims") <= reclaim.ReclaimIndexAfter {
		t.Errorf("hostile tenant: the sweep listed Jobs %d times and PersistentVolumeClaims %d times; want the managers' checks to read the Jobs, and the reclaim index (%s)",
			m.count("list", "jobs"), m.count("list", "persistentvolumeclaims"), describe(m.Audited))
	}
	return s.rows, s.version
}

// hostile seeds the hostile tenant's namespace.
func (s seeder) hostile(ctx context.Context) error {
	if err := s.namespace(ctx, hostileNamespace, map[string]string{setLabel: hostileNamespace}); err != nil {
		return err
	}
	if err := inParallel(ctx, 8, hostilePods, func(ctx context.Context, i int) error {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: hostileNamespace, Name: fmt.Sprintf("web-%03d", i), Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "web", Image: "registry.invalid/web:1", Args: bulk(hostileObjectBytes),
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
		}
		if err := create(ctx, func() error {
			_, err := s.kube.CoreV1().Pods(hostileNamespace).Create(ctx, pod, metav1.CreateOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("create pod %s: %w", pod.Name, err)
		}
		patch := fmt.Sprintf(`{"status":{"phase":%q}}`, corev1.PodRunning)
		_, err := s.kube.CoreV1().Pods(hostileNamespace).Patch(ctx, pod.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
		return err
	}); err != nil {
		return err
	}
	if err := inParallel(ctx, 8, hostileJobs, func(ctx context.Context, i int) error {
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: hostileNamespace, Name: fmt.Sprintf("suite-%03d", i)}, Spec: batchv1.JobSpec{
			Suspend: ptr.To(true),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "e2e"}},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
					Name: "e2e", Image: "registry.invalid/e2e:1", Args: bulk(hostileObjectBytes)}}},
			},
		}}
		return create(ctx, func() error {
			_, err := s.kube.BatchV1().Jobs(hostileNamespace).Create(ctx, job, metav1.CreateOptions{})
			return err
		})
	}); err != nil {
		return err
	}
	padding := strings.Repeat("z", hostileManagerBytes)
	return inParallel(ctx, seedConcurrency, hostileManagers, func(ctx context.Context, i int) error {
		m := newManager(hostileNamespace, fmt.Sprintf("suite-%03d", i), map[string]any{"namespace": hostileNamespace, "policies": []any{
			map[string]any{"name": "passed", "action": map[string]any{"type": policy.ActionDelete}, "condition": map[string]any{
				"type": policy.ConditionPodsSucceed, "params": map[string]any{"initialDelaySeconds": int64(0), "podLabels": map[string]any{"app": "e2e"}}}},
		}})
		m.SetLabels(map[string]string{setLabel: hostileNamespace})
		m.SetAnnotations(map[string]string{"padding": padding})
		return create(ctx, func() error {
			_, err := s.dyn.Resource(cluster.ManagerResource).Namespace(hostileNamespace).Create(ctx, m, metav1.CreateOptions{})
			return err
		})
	})
}

// hostileTargets computes the hostile tenant's target.
func hostileTargets(hostile rowSet) []target {
	m, ok := hostile.get(hostileManagers, hostileSweepLabel())
	if !ok {
		return nil
	}
	return []target{{N: hostileManagers, Source: "31", Met: m.MaxRSS > 0 && m.MaxRSS <= hostileRSSBoundMiB<<10,
		What:     fmt.Sprintf("hostile tenant: peak RSS ≤ %d MiB (the chart's limit is 128Mi)", hostileRSSBoundMiB),
		Measured: fmt.Sprintf("%s (%s)", mib(m.MaxRSS), m.ref())}}
}

// hostileMethod describes the hostile tenant's part.
func hostileMethod(b *strings.Builder) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("A fresh control plane of its own. Seeded: one tenant namespace, `%s`, holding %d Running pods (`app=web`) and %d Jobs\n", hostileNamespace, hostilePods, hostileJobs)
	p("(suspended, pod template `app=e2e`, never finished), each of about %d bytes (container arguments), and %d managers\n", hostileObjectBytes, hostileManagers)
	p("of about %d KiB each (an annotation), PODS_SUCCEED (initialDelaySeconds 0) on `app=e2e` → DELETE, which the Jobs keep waiting: every check reads\n", hostileManagerBytes>>10)
	p("the namespace's Jobs. Beside it, a rule in `%s` (trusted) with `TTL` 0 → DELETE over %d namespaces, past the %d after\n", hostileRulesNamespace, hostileRuleNamespaces, reclaim.ReclaimIndexAfter)
	p("which what the DELETEs free is read from one cluster-wide list of the pods not finished, the tenant's among them. One sweep is\n")
	p("measured: it must leave the tenant's managers waiting and delete the rule's namespaces, within the peak RSS of the target.\n\n")
}
