// Package reclaim is what a DELETE frees, read before it (nsman sweep
// --reclaim): the requests of a namespace's pods not finished, its
// PersistentVolumeClaims' storage and its LoadBalancer Services, read
// namespace by namespace, then past ReclaimIndexAfter namespaces in one
// sweep from one cluster-wide paged list of each.
package reclaim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/rest"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/report"
)

// ReclaimIndexAfter is the number of namespaces of one sweep whose reclaim
// (what their DELETE frees) is read namespace by namespace, three requests
// each (pods, PersistentVolumeClaims, Services), before the sweep lists
// them once, cluster-wide and paged (one request per PageSize pods not
// finished, PVCs and LoadBalancer Services), keeping only per-namespace
// sums. 32 namespaces cost 96 requests, about what the cluster-wide lists
// of a cluster of 50,000 pods take (100 pages of 500): a sweep never pays
// much more than twice the cheaper of the two ways, a handful of DELETEs
// stays at three small lists each, and 1,000 DELETEs make 96 requests and
// the pages rather than 3,000 requests.
const ReclaimIndexAfter = 32

// unfinishedPods selects the pods a DELETE stops: those not yet Succeeded
// or Failed.
var unfinishedPods = fields.AndSelectors(
	fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
	fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
).String()

// loadBalancerServices selects the Services of type LoadBalancer: a field
// the API server selects on from Kubernetes 1.31.
var loadBalancerServices = fields.OneTermEqualSelector("spec.type", string(corev1.ServiceTypeLoadBalancer)).String()

// Reclaim is what one sweep knows of what DELETEs free (see NewReclaim);
// it is safe for concurrent use.
type Reclaim struct {
	reads probe.Reads
	// asked counts the namespaces asked about.
	asked atomic.Int64
	// once lists index, what each namespace frees (absent: nothing), past
	// ReclaimIndexAfter namespaces; index stays nil when listing it failed.
	once  sync.Once
	index map[string]freed
	// allServices: the API server does not select Services by spec.type
	// (before 1.31): they are listed all, and filtered here.
	allServices atomic.Bool
}

// NewReclaim returns the reclaim reads of a sweep that reads with reads.
func NewReclaim(reads probe.Reads) *Reclaim { return &Reclaim{reads: reads} }

// freed is what a namespace frees, summed: 32 bytes a namespace in the
// sweep's index, where a Reclaimed holds three Quantities (about 180).
type freed struct {
	cpu           int64 // millicores
	memory        int64 // bytes
	storage       int64 // bytes
	loadBalancers int
}

// addPod adds what pod requests, as the scheduler counts it: containers,
// init containers and sidecars, overhead, pod-level resources.
func (f *freed) addPod(pod *corev1.Pod) {
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	f.cpu += requests.Cpu().MilliValue()
	f.memory += requests.Memory().Value()
}

// reclaimed is f as a report says it.
func (f freed) reclaimed() report.Reclaimed {
	return report.Reclaimed{
		CPU:           *resource.NewMilliQuantity(f.cpu, resource.DecimalSI),
		Memory:        *resource.NewQuantity(f.memory, resource.BinarySI),
		Storage:       *resource.NewQuantity(f.storage, resource.BinarySI),
		LoadBalancers: f.loadBalancers,
	}
}

// Namespace is what deleting namespace frees, read now (per
// namespace, or from the sweep's cluster-wide sums past ReclaimIndexAfter
// namespaces).
//
// A namespace's own lists are bounded by Reads.NamespaceTimeout, the sweep's index
// by --claim-ttl: a namespace full of claims or Services delays its DELETE
// that long at most, and is deleted, what it frees unknown.
func (x *Reclaim) Namespace(ctx context.Context, namespace string) (report.Reclaimed, error) {
	if x.asked.Add(1) > ReclaimIndexAfter {
		if index := x.sweepIndex(ctx); index != nil {
			return index[namespace].reclaimed(), nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, x.reads.NamespaceTimeout())
	defer cancel()
	byNamespace, err := x.listFreed(ctx, namespace)
	if err != nil {
		return report.Reclaimed{}, fmt.Errorf("read what deleting %s reclaims: %w", namespace, err)
	}
	return byNamespace[namespace].reclaimed(), nil
}

// sweepIndex returns the sweep's index of what namespaces free, listed
// once. When listing it fails, it is nil, and namespaces are read one by
// one.
func (x *Reclaim) sweepIndex(ctx context.Context) map[string]freed {
	x.once.Do(func() {
		ctx, cancel := context.WithTimeout(ctx, x.reads.ClaimTTL)
		defer cancel()
		index, err := x.listFreed(ctx, metav1.NamespaceAll)
		if err != nil {
			err = fmt.Errorf("list for the sweep's index of what DELETEs reclaim: %w", err)
			x.reads.Log.Warn("reading what DELETEs reclaim namespace by namespace", "error", err.Error())
			return
		}
		x.index = index
	})
	return x.index
}

// listFreed lists, paged, the pods not finished, the PVCs and the
// LoadBalancer Services of namespace (all, when empty), the three at once
// (one after the other, they were most of what reclaim added to a sweep of
// 1,000 DELETEs), and sums what each namespace frees.
func (x *Reclaim) listFreed(ctx context.Context, namespace string) (map[string]freed, error) {
	lists := []func(context.Context, string, addFreed) error{x.podsFree, x.claimsFree, x.loadBalancersFree}
	var (
		wg    sync.WaitGroup
		parts = make([]map[string]freed, len(lists))
		errs  = make([]error, len(lists))
	)
	for i, list := range lists {
		wg.Go(func() {
			part := map[string]freed{}
			errs[i] = list(ctx, namespace, func(namespace string, fn func(*freed)) {
				f := part[namespace]
				fn(&f)
				part[namespace] = f
			})
			parts[i] = part
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	byNamespace := parts[0]
	for _, part := range parts[1:] {
		for ns, f := range part {
			sum := byNamespace[ns]
			sum.cpu, sum.memory = sum.cpu+f.cpu, sum.memory+f.memory
			sum.storage, sum.loadBalancers = sum.storage+f.storage, sum.loadBalancers+f.loadBalancers
			byNamespace[ns] = sum
		}
	}
	return byNamespace, nil
}

// addFreed adds, with fn, to what a namespace frees.
type addFreed func(namespace string, fn func(*freed))

// podsFree adds what the pods not finished in namespace request.
func (x *Reclaim) podsFree(ctx context.Context, namespace string, add addFreed) error {
	// Pods are whole objects a tenant writes (up to about 1.5 MiB
	// each): decoded one at a time, of each its requests alone.
	pods := func() *rest.Request {
		return x.reads.Clients.Kube.CoreV1().RESTClient().Get().Namespace(namespace).Resource("pods")
	}
	err := cluster.EachStreamed(ctx, x.reads.PageSize, metav1.ListOptions{FieldSelector: unfinishedPods}, pods, func(pod *podFields) error {
		if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
			add(pod.Metadata.Namespace, func(f *freed) { f.addPod(&corev1.Pod{Spec: pod.Spec.Spec()}) })
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("list pods (%s): %w", unfinishedPods, err)
	}
	return nil
}

// claimsFree adds the storage the PVCs of namespace request.
func (x *Reclaim) claimsFree(ctx context.Context, namespace string, add addFreed) error {
	claims := func() *rest.Request {
		return x.reads.Clients.Kube.CoreV1().RESTClient().Get().Namespace(namespace).Resource("persistentvolumeclaims")
	}
	err := cluster.EachStreamed(ctx, x.reads.PageSize, metav1.ListOptions{}, claims, func(pvc *claimFields) error {
		add(pvc.Metadata.Namespace, func(f *freed) { f.storage += pvc.Spec.Resources.Requests.Storage().Value() })
		return nil
	})
	if err != nil {
		return fmt.Errorf("list persistentvolumeclaims: %w", err)
	}
	return nil
}

// loadBalancersFree counts the LoadBalancer Services of namespace.
func (x *Reclaim) loadBalancersFree(ctx context.Context, namespace string, add addFreed) error {
	err := x.eachLoadBalancer(ctx, namespace, func(svc *serviceFields) {
		add(svc.Metadata.Namespace, func(f *freed) { f.loadBalancers++ })
	})
	if err != nil {
		return fmt.Errorf("list services: %w", err)
	}
	return nil
}

// eachLoadBalancer calls fn with every Service of type LoadBalancer in
// namespace (all, when empty): selected by the API server, else, when it
// refuses the selector (before 1.31), from a list of every Service, from
// then on in this sweep.
func (x *Reclaim) eachLoadBalancer(ctx context.Context, namespace string, fn func(*serviceFields)) error {
	list := func() *rest.Request {
		return x.reads.Clients.Kube.CoreV1().RESTClient().Get().Namespace(namespace).Resource("services")
	}
	seen := 0
	keep := func(svc *serviceFields) error {
		if seen++; svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
			fn(svc)
		}
		return nil
	}
	if !x.allServices.Load() {
		err := cluster.EachStreamed(ctx, x.reads.PageSize, metav1.ListOptions{FieldSelector: loadBalancerServices}, list, keep)
		if !apierrors.IsBadRequest(err) || seen > 0 {
			return err
		}
		x.allServices.Store(true)
	}
	return cluster.EachStreamed(ctx, x.reads.PageSize, metav1.ListOptions{}, list, keep)
}

// claimFields and serviceFields are what reclaim reads of a
// PersistentVolumeClaim and of a Service: their lists are decoded one
// object at a time into them (see cluster.EachStreamed).
type claimFields struct {
	Metadata struct {
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		Resources corev1.VolumeResourceRequirements `json:"resources"`
	} `json:"spec"`
}

type serviceFields struct {
	Metadata struct {
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		Type corev1.ServiceType `json:"type"`
	} `json:"spec"`
}

// podFields is what reclaim reads of a pod.
type podFields struct {
	Metadata struct {
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec   cluster.PodRequests `json:"spec"`
	Status struct {
		Phase corev1.PodPhase `json:"phase"`
	} `json:"status"`
}
