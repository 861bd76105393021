package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/sweep"
)

// setLabel tells the seeded sets apart, so that a sweep or a write floor
// can select one of them.
const setLabel = "nsman.bench/set"

// Seeded sets.
const (
	setBackground = "background" // N managers, none due
	// due for DELETE, swept by nsman, written by the write floor (claim,
	// delete, deactivate), and by the write floor (claim, delete): one
	// set of each per round, named with the round's number appended
	setDue         = "due"
	setWriteFloor  = "write-floor"
	setWriteFloor2 = "write-floor-2"
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
)

// seeder creates namespaces, managers and pods as the admin user.
type seeder struct {
	kube kubernetes.Interface
	dyn  dynamic.Interface
}

// seed creates n namespaces prefix-00000…, each with a manager of the same
// name (which targets it) of the kind kindOf(i), labelled set.
func (s seeder) seed(ctx context.Context, prefix, set string, n int, kindOf func(int) kind) error {
	jobs := make(chan int)
	errs := make(chan error, seedConcurrency)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range seedConcurrency {
		wg.Go(func() {
			for i := range jobs {
				if err := s.one(ctx, fmt.Sprintf("%s-%05d", prefix, i), set, kindOf(i)); err != nil {
					errs <- err
					cancel()
					return
				}
			}
		})
	}
feed:
	for i := range n {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return ctx.Err()
}

func (s seeder) one(ctx context.Context, name, set string, k kind) error {
	labels := map[string]string{setLabel: set}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := create(ctx, func() error {
		_, err := s.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	m := managerObject(name, set, k)
	if err := create(ctx, func() error {
		_, err := s.dyn.Resource(sweep.ManagerResource).Namespace(name).Create(ctx, m, metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("create manager %s: %w", name, err)
	}
	if k != podsRunning {
		return nil
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "e2e", Labels: map[string]string{"app": "e2e"}},
		Spec: corev1.PodSpec{
			NodeName:   nodeName,
			Containers: []corev1.Container{{Name: "test", Image: "registry.invalid/e2e:1"}},
		},
	}
	var created *corev1.Pod
	if err := create(ctx, func() error {
		var err error
		created, err = s.kube.CoreV1().Pods(name).Create(ctx, pod, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			created, err = s.kube.CoreV1().Pods(name).Get(ctx, pod.Name, metav1.GetOptions{})
		}
		return err
	}); err != nil {
		return fmt.Errorf("create pod %s/e2e: %w", name, err)
	}
	created.Status.Phase = corev1.PodRunning
	if _, err := s.kube.CoreV1().Pods(name).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("set pod %s/e2e Running: %w", name, err)
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
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": policy.Group + "/" + policy.Version,
		"kind":       policy.Kind,
		"metadata":   map[string]any{"namespace": name, "name": name},
		"spec": map[string]any{"policies": []any{map[string]any{
			"name":      "cleanup",
			"condition": cond,
			"action":    map[string]any{"type": policy.ActionDelete},
		}}},
	}}
	obj.SetLabels(map[string]string{setLabel: set})
	return obj
}
