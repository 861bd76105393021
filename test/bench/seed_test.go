package bench

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/policy"
)

// setLabel tells the seeded sets apart, so that a sweep or a write floor
// can select one of them.
const setLabel = "nsman.bench/set"

// Seeded sets.
const (
	setBackground = "background" // N managers, none due
	// due for DELETE, swept by nsman, swept by nsman with
	// --reclaim=false, written by the write floor (claim, delete,
	// deactivate), by the write floor (claim, delete), and deleted by the
	// delete floor: one set of each per round, named with the round's
	// number appended
	setDue          = "due"
	setDueNoReclaim = "due-no-reclaim"
	setWriteFloor   = "write-floor"
	setWriteFloor2  = "write-floor-2"
	setDeleteFloor  = "delete-floor"
	// due for DELETE, swept by nsman without client-side throttling
	setDueUnthrottled = "due-unthrottled"
	// due for DELETE, swept by shards side by side: the set's name is
	// this prefix and the number of shards
	setShardedPrefix = "due-shards-"
)

// shardCounts are the numbers of shards the DELETE sweep is measured with,
// besides one.
var shardCounts = []int{2, 4}

// nodeName is a Node object the seeded pods are bound to; no kubelet runs.
const nodeName = "bench-node"

// seedConcurrency bounds the concurrent creates while seeding.
const seedConcurrency = 32

// kind is what a seeded manager waits on.
type kind int

const (
	// ttlNotDue: a TTL of a day.
	ttlNotDue kind = iota
	// podsRunning: PODS_SUCCEED past its initial delay, with one Running pod:
	// every sweep checks its pods, and keeps waiting.
	podsRunning
	// ttlDue: a TTL of zero, due for DELETE.
	ttlDue
	// idleActive: IDLE for idleFor (issue 25's part), in a namespace where
	// something happened less than idleFor ago: it keeps waiting.
	idleActive
	// warnLater: a TTL of warnLaterTTL with warnBefore [warnThreshold]:
	// not within it (issue 48's part).
	warnLater
	// warnSoon: a TTL of warnSoonTTL with warnBefore [warnThreshold]:
	// within it, warned.
	warnSoon
)

// seeder creates namespaces, managers and pods as the admin user.
type seeder struct {
	kube kubernetes.Interface
	dyn  dynamic.Interface
}

// seed creates n namespaces prefix-00000…, each with a manager of the same
// name (which targets it) of the kind kindOf(i), labelled set.
func (s seeder) seed(ctx context.Context, prefix, set string, n int, kindOf func(int) kind) error {
	return inParallel(ctx, seedConcurrency, n, func(ctx context.Context, i int) error {
		return s.one(ctx, seededName(prefix, i), set, kindOf(i))
	})
}

// finalize ends the deletion of the n namespaces prefix-00000…, as the
// namespace controller would, which the API tier the benchmarks run on
// lacks: a namespace deleted stays terminating until its finalizers are
// gone. Otherwise every later sweep would list the namespaces every earlier
// run deleted. One not deleted (or gone already) is left as it is.
func (s seeder) finalize(ctx context.Context, prefix string, n int) error {
	return inParallel(ctx, seedConcurrency, n, func(ctx context.Context, i int) error {
		ns, err := s.kube.CoreV1().Namespaces().Get(ctx, seededName(prefix, i), metav1.GetOptions{})
		if apierrors.IsNotFound(err) || err == nil && ns.DeletionTimestamp == nil {
			return nil
		}
		if err != nil {
			return err
		}
		ns.Spec.Finalizers = nil
		if _, err := s.kube.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("finalize namespace %s: %w", ns.Name, err)
		}
		return nil
	})
}

// namespaces creates n namespaces prefix-00000… labelled labels, each with
// the pod e2e in phase phaseOf(i), and no manager.
func (s seeder) namespaces(ctx context.Context, prefix string, labels map[string]string, n int, phaseOf func(int) corev1.PodPhase) error {
	return inParallel(ctx, seedConcurrency, n, func(ctx context.Context, i int) error {
		name := seededName(prefix, i)
		if err := s.namespace(ctx, name, labels); err != nil {
			return err
		}
		return s.pod(ctx, name, phaseOf(i))
	})
}

// seededName is the name of the i-th namespace seeded with prefix.
func seededName(prefix string, i int) string { return fmt.Sprintf("%s-%05d", prefix, i) }

func (s seeder) one(ctx context.Context, name, set string, k kind) error {
	if err := s.namespace(ctx, name, map[string]string{setLabel: set}); err != nil {
		return err
	}
	m := managerObject(name, set, k)
	if err := create(ctx, func() error {
		_, err := s.dyn.Resource(cluster.ManagerResource).Namespace(name).Create(ctx, m, metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("create manager %s: %w", name, err)
	}
	if k != podsRunning {
		return nil
	}
	return s.pod(ctx, name, corev1.PodRunning)
}

func (s seeder) namespace(ctx context.Context, name string, labels map[string]string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := create(ctx, func() error {
		_, err := s.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

// pod creates the pod e2e (app=e2e) in namespace, bound to nodeName, and
// puts it in phase; one left Pending was created and never started.
func (s seeder) pod(ctx context.Context, namespace string, phase corev1.PodPhase) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "e2e", Labels: map[string]string{"app": "e2e"}},
		Spec: corev1.PodSpec{
			NodeName:   nodeName,
			Containers: []corev1.Container{{Name: "test", Image: "registry.invalid/e2e:1"}},
		},
	}
	if err := create(ctx, func() error {
		_, err := s.kube.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("create pod %s/e2e: %w", namespace, err)
	}
	if phase == corev1.PodPending {
		return nil
	}
	return s.setPodPhase(ctx, namespace, phase)
}

// setPodPhase sets the phase of the pod e2e in namespace, as a kubelet
// would.
func (s seeder) setPodPhase(ctx context.Context, namespace string, phase corev1.PodPhase) error {
	patch := fmt.Sprintf(`{"status":{"phase":%q}}`, phase)
	if _, err := s.kube.CoreV1().Pods(namespace).Patch(ctx, "e2e", types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("set pod %s/e2e %s: %w", namespace, phase, err)
	}
	return nil
}

// revision creates the ControllerRevision revisionName in namespace: the
// cheapest of what IDLE counts as activity (no controller acts on it).
func (s seeder) revision(ctx context.Context, namespace string) error {
	rev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: revisionName},
		Data: runtime.RawExtension{Raw: []byte(`{}`)}, Revision: 1}
	if err := create(ctx, func() error {
		_, err := s.kube.AppsV1().ControllerRevisions(namespace).Create(ctx, rev, metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("create controllerrevision %s/%s: %w", namespace, revisionName, err)
	}
	return nil
}

// create retries a create briefly (a namespace just created may not be
// visible to admission yet); AlreadyExists is success.
func create(ctx context.Context, do func() error) error {
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Steps: 6, Duration: 100 * time.Millisecond, Factor: 2}, func(context.Context) (bool, error) {
		last = do()
		if last == nil || apierrors.IsAlreadyExists(last) {
			return true, nil
		}
		return false, nil
	})
	if err != nil && last != nil {
		return last
	}
	return err
}

// managerObject is a NamespaceManager in namespace name that targets it.
func managerObject(name, set string, k kind) *unstructured.Unstructured {
	obj := newManager(name, name, map[string]any{"policies": []any{deletePolicy("cleanup", k)}})
	obj.SetLabels(map[string]string{setLabel: set})
	return obj
}

// newManager is a NamespaceManager namespace/name with spec.
func newManager(namespace, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": policy.Group + "/" + policy.Version,
		"kind":       policy.Kind,
		"metadata":   map[string]any{"namespace": namespace, "name": name},
		"spec":       spec,
	}}
}

// deletePolicy is a policy named name that DELETEs when the condition of
// kind k holds.
func deletePolicy(name string, k kind) map[string]any {
	var cond map[string]any
	switch k {
	case ttlNotDue:
		cond = map[string]any{"type": policy.ConditionTTL, "params": map[string]any{"ttlSeconds": int64(86400)}}
	case ttlDue:
		cond = map[string]any{"type": policy.ConditionTTL, "params": map[string]any{"ttlSeconds": int64(0)}}
	case podsRunning:
		cond = map[string]any{"type": policy.ConditionPodsSucceed, "params": map[string]any{
			"initialDelaySeconds": int64(0),
			"podLabels":           map[string]any{"app": "e2e"},
		}}
	case idleActive:
		cond = map[string]any{"type": policy.ConditionIdle, "params": map[string]any{"idleSeconds": int64(idleFor / time.Second)}}
	case warnLater, warnSoon:
		ttl := map[kind]time.Duration{warnLater: warnLaterTTL, warnSoon: warnSoonTTL}[k]
		cond = map[string]any{"type": policy.ConditionTTL, "params": map[string]any{"ttlSeconds": int64(ttl / time.Second)}}
		return map[string]any{"name": name, "condition": cond, "action": map[string]any{"type": policy.ActionDelete}, "warnBefore": []any{warnThreshold}}
	}
	return map[string]any{"name": name, "condition": cond, "action": map[string]any{"type": policy.ActionDelete}}
}
