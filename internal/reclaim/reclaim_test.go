package reclaim

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/cluster/clustertest"
	"github.com/nsman/nsman/report"
)

// reclaimRequests is a container's requests: cpu, then memory ("" for none).
func reclaimRequests(cpu, memory string) corev1.ResourceRequirements {
	list := corev1.ResourceList{}
	if cpu != "" {
		list[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		list[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	return corev1.ResourceRequirements{Requests: list}
}

func reclaimContainer(name, cpu, memory string) corev1.Container {
	return corev1.Container{Name: name, Image: "registry.invalid/" + name, Resources: reclaimRequests(cpu, memory)}
}

// reclaimPod is a pod of namespace in phase whose one container requests
// cpu and memory.
func reclaimPod(namespace, name string, phase corev1.PodPhase, cpu, memory string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{reclaimContainer("main", cpu, memory)}},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

func reclaimPVC(namespace, name, storage string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(storage)},
		}},
	}
}

func reclaimService(namespace, name string, typ corev1.ServiceType) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: corev1.ServiceSpec{Type: typ}}
}

func reclaimOf(t *testing.T, client *kubefake.Clientset, log *slog.Logger) *Reclaim {
	t.Helper()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return NewReclaim(testReads(cluster.Clients{Kube: clustertest.CoreListsOverHTTP(t, client)}, defaultClaimTTL, log))
}

// reclaimWant fails unless got is cpu, memory, storage (as quantities)
// and loadBalancers.
func reclaimWant(t *testing.T, what string, got report.Reclaimed, cpu, memory, storage string, loadBalancers int) {
	t.Helper()
	if got.CPU.Cmp(resource.MustParse(cpu)) != 0 || got.Memory.Cmp(resource.MustParse(memory)) != 0 ||
		got.Storage.Cmp(resource.MustParse(storage)) != 0 || got.LoadBalancers != loadBalancers {
		t.Errorf("%s: cpu %s, memory %s, storage %s, %d load balancers; want %s, %s, %s, %d", what,
			got.CPU.String(), got.Memory.String(), got.Storage.String(), got.LoadBalancers, cpu, memory, storage, loadBalancers)
	}
}

// reclaimLists counts the list requests of resource the client received: in a
// namespace, and cluster-wide.
func reclaimLists(client *kubefake.Clientset, resource string) (inNamespace, clusterWide int) {
	for _, a := range client.Actions() {
		if a.GetVerb() != "list" || a.GetResource().Resource != resource {
			continue
		}
		if a.GetNamespace() == "" {
			clusterWide++
		} else {
			inNamespace++
		}
	}
	return inNamespace, clusterWide
}

// TestReclaimPodRequests: a pod frees its effective requests, as the
// scheduler counts them.
func TestReclaimPodRequests(t *testing.T) {
	sidecar := reclaimContainer("proxy", "100m", "64Mi")
	sidecar.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	for _, tt := range []struct {
		name        string
		spec        corev1.PodSpec
		cpu, memory string
	}{
		{"containers are summed", corev1.PodSpec{Containers: []corev1.Container{reclaimContainer("a", "250m", "128Mi"), reclaimContainer("b", "500m", "256Mi")}}, "750m", "384Mi"},
		{"an init container larger than the containers", corev1.PodSpec{
			InitContainers: []corev1.Container{reclaimContainer("migrate", "2", "64Mi")},
			Containers:     []corev1.Container{reclaimContainer("a", "500m", "128Mi"), reclaimContainer("b", "500m", "128Mi")},
		}, "2", "256Mi"},
		{"a sidecar runs beside the containers", corev1.PodSpec{
			InitContainers: []corev1.Container{sidecar},
			Containers:     []corev1.Container{reclaimContainer("a", "1", "1Gi")},
		}, "1100m", "1088Mi"},
		{"an init container after a sidecar runs beside it", corev1.PodSpec{
			InitContainers: []corev1.Container{sidecar, reclaimContainer("migrate", "3", "64Mi")},
			Containers:     []corev1.Container{reclaimContainer("a", "1", "1Gi")},
		}, "3100m", "1088Mi"},
		{"overhead", corev1.PodSpec{
			Containers: []corev1.Container{reclaimContainer("a", "1", "1Gi")},
			Overhead:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("120Mi")},
		}, "1250m", "1144Mi"},
		{"pod-level resources", corev1.PodSpec{
			Resources:  &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("4Gi")}},
			Containers: []corev1.Container{reclaimContainer("a", "1", "1Gi")},
		}, "4", "4Gi"},
		{"no requests", corev1.PodSpec{Containers: []corev1.Container{reclaimContainer("a", "", "")}}, "0", "0"},
	} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "p"}, Spec: tt.spec, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		got, err := reclaimOf(t, kubefake.NewClientset(p), nil).Namespace(t.Context(), "team")
		if err != nil {
			t.Fatal(err)
		}
		reclaimWant(t, tt.name, got, tt.cpu, tt.memory, "0", 0)
		if tt.cpu == "0" && !got.IsZero() {
			t.Errorf("%s: IsZero = false, want true", tt.name)
		}
	}
}

// TestReclaimExcludesFinishedPods: the pods of phase Succeeded or Failed
// free nothing; the API server is asked for the others only (the fake
// clientset applies no field selector: the request's is checked).
func TestReclaimExcludesFinishedPods(t *testing.T) {
	client := kubefake.NewClientset(
		reclaimPod("team", "running", corev1.PodRunning, "1", "1Gi"),
		reclaimPod("team", "pending", corev1.PodPending, "500m", "512Mi"),
		reclaimPod("team", "unknown", corev1.PodUnknown, "100m", "0"),
		reclaimPod("team", "done", corev1.PodSucceeded, "8", "8Gi"),
		reclaimPod("team", "crashed", corev1.PodFailed, "16", "16Gi"),
		reclaimPod("other", "running", corev1.PodRunning, "32", "32Gi"),
	)
	var selectors []fields.Selector
	var mu sync.Mutex
	client.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		selectors = append(selectors, a.(k8stesting.ListAction).GetListRestrictions().Fields)
		return false, nil, nil
	})
	got, err := reclaimOf(t, client, nil).Namespace(t.Context(), "team")
	if err != nil {
		t.Fatal(err)
	}
	reclaimWant(t, "team", got, "1600m", "1536Mi", "0", 0)
	if len(selectors) != 1 {
		t.Fatalf("%d pods lists, want 1", len(selectors))
	}
	for phase, want := range map[corev1.PodPhase]bool{corev1.PodRunning: true, corev1.PodPending: true, corev1.PodUnknown: true, corev1.PodSucceeded: false, corev1.PodFailed: false} {
		if got := selectors[0].Matches(fields.Set{"status.phase": string(phase)}); got != want {
			t.Errorf("pods listed with field selector %q: a pod %s matches: %t, want %t", selectors[0], phase, got, want)
		}
	}
}

// TestReclaimStorageAndLoadBalancers: a DELETE frees the storage its PVCs
// request, and its Services of type LoadBalancer; the API server is asked
// for those only.
func TestReclaimStorageAndLoadBalancers(t *testing.T) {
	client := kubefake.NewClientset(
		reclaimPVC("team", "data", "1Gi"), reclaimPVC("team", "logs", "512Mi"), reclaimPVC("other", "data", "1Ti"),
		reclaimService("team", "web", corev1.ServiceTypeLoadBalancer), reclaimService("team", "api", corev1.ServiceTypeLoadBalancer),
		reclaimService("team", "internal", corev1.ServiceTypeClusterIP), reclaimService("team", "node", corev1.ServiceTypeNodePort),
		reclaimService("team", "external", corev1.ServiceTypeExternalName), reclaimService("other", "web", corev1.ServiceTypeLoadBalancer),
	)
	var serviceSelectors []string
	client.PrependReactor("list", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		serviceSelectors = append(serviceSelectors, a.(k8stesting.ListAction).GetListRestrictions().Fields.String())
		return false, nil, nil
	})
	got, err := reclaimOf(t, client, nil).Namespace(t.Context(), "team")
	if err != nil {
		t.Fatal(err)
	}
	reclaimWant(t, "team", got, "0", "0", "1536Mi", 2)
	if got.Storage.String() != "1536Mi" {
		t.Errorf("storage %s, want 1536Mi", got.Storage.String())
	}
	if want := []string{"spec.type=LoadBalancer"}; fmt.Sprint(serviceSelectors) != fmt.Sprint(want) {
		t.Errorf("services listed with field selectors %q, want %q", serviceSelectors, want)
	}
}

// TestReclaimServicesWithoutTypeSelector: an API server that refuses the
// field selector spec.type (before 1.31) has every Service listed, and the
// LoadBalancers counted here, from then on without asking it again.
func TestReclaimServicesWithoutTypeSelector(t *testing.T) {
	client := kubefake.NewClientset(
		reclaimService("a", "web", corev1.ServiceTypeLoadBalancer), reclaimService("a", "internal", corev1.ServiceTypeClusterIP),
		reclaimService("b", "web", corev1.ServiceTypeLoadBalancer), reclaimService("b", "node", corev1.ServiceTypeNodePort),
	)
	refused := 0
	client.PrependReactor("list", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if !a.(k8stesting.ListAction).GetListRestrictions().Fields.Empty() {
			refused++
			return true, nil, apierrors.NewBadRequest("field label not supported: spec.type")
		}
		return false, nil, nil
	})
	x := reclaimOf(t, client, nil)
	for _, ns := range []string{"a", "b"} {
		got, err := x.Namespace(t.Context(), ns)
		if err != nil {
			t.Fatal(err)
		}
		reclaimWant(t, ns, got, "0", "0", "0", 1)
	}
	if refused != 1 {
		t.Errorf("the selector was refused %d times, want once: asked no more after that", refused)
	}
	// Another error is no refusal of the selector.
	client.PrependReactor("list", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("services"), "", fmt.Errorf("no"))
	})
	if _, err := NewReclaim(x.reads).Namespace(t.Context(), "a"); !apierrors.IsForbidden(err) {
		t.Errorf("services forbidden: error %v, want it forbidden", err)
	}
}

// reclaimCluster is namespaces with pods (finished and not), PVCs and
// Services of every type, and a namespace with nothing.
func reclaimCluster(namespaces int) []runtime.Object {
	var objs []runtime.Object
	for i := range namespaces {
		ns := fmt.Sprintf("team-%03d", i)
		for j := range i % 4 {
			objs = append(objs, reclaimPod(ns, fmt.Sprintf("run-%d", j), corev1.PodRunning, fmt.Sprintf("%dm", 100*(i+1)), fmt.Sprintf("%dMi", 64*(j+1))))
		}
		objs = append(objs, reclaimPod(ns, "done", corev1.PodSucceeded, "1", "1Gi"))
		if i%3 == 0 {
			objs = append(objs, reclaimPVC(ns, "data", fmt.Sprintf("%dGi", i+1)), reclaimService(ns, "web", corev1.ServiceTypeLoadBalancer))
		}
		objs = append(objs, reclaimService(ns, "internal", corev1.ServiceTypeClusterIP))
	}
	return objs
}

// TestReclaimClusterWideIsPerNamespace: past ReclaimIndexAfter namespaces,
// the sweep's cluster-wide lists (one of each, for every namespace) give
// what lists namespace by namespace give.
func TestReclaimClusterWideIsPerNamespace(t *testing.T) {
	const namespaces = 3 * ReclaimIndexAfter
	objs := reclaimCluster(namespaces)
	perNamespace, clusterWide := kubefake.NewClientset(objs...), kubefake.NewClientset(objs...)
	indexed := reclaimOf(t, clusterWide, nil)
	indexed.asked.Store(ReclaimIndexAfter)
	nonZero := 0
	for i := range namespaces + 1 {
		ns := fmt.Sprintf("team-%03d", i) // the last does not exist
		want, err := reclaimOf(t, perNamespace, nil).Namespace(t.Context(), ns)
		if err != nil {
			t.Fatal(err)
		}
		got, err := indexed.Namespace(t.Context(), ns)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: cluster-wide %v, namespace by namespace %v", ns, got, want)
		}
		if !want.IsZero() {
			nonZero++
		}
	}
	if nonZero < namespaces/2 {
		t.Fatalf("only %d namespaces free anything: the test tests little", nonZero)
	}
	for _, resource := range []string{"pods", "persistentvolumeclaims", "services"} {
		if in, all := reclaimLists(perNamespace, resource); in != namespaces+1 || all != 0 {
			t.Errorf("namespace by namespace: %s listed %d times in a namespace, %d cluster-wide; want %d, 0", resource, in, all, namespaces+1)
		}
		if in, all := reclaimLists(clusterWide, resource); in != 0 || all != 1 {
			t.Errorf("cluster-wide: %s listed %d times in a namespace, %d cluster-wide; want 0, 1", resource, in, all)
		}
	}
}

// TestReclaimConcurrentDeletes: 16 workers asking at once read the first
// ReclaimIndexAfter namespaces one by one, then share one cluster-wide
// list of each resource.
func TestReclaimConcurrentDeletes(t *testing.T) {
	const namespaces, workers = 200, 16
	client := kubefake.NewClientset(reclaimCluster(namespaces)...)
	x := reclaimOf(t, client, nil)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		sum  report.Reclaimed
		todo = make(chan string)
	)
	for range workers {
		wg.Go(func() {
			for ns := range todo {
				got, err := x.Namespace(t.Context(), ns)
				if err != nil {
					t.Error(err)
					continue
				}
				mu.Lock()
				sum.Add(got)
				mu.Unlock()
			}
		})
	}
	for i := range namespaces {
		todo <- fmt.Sprintf("team-%03d", i)
	}
	close(todo)
	wg.Wait()

	var want report.Reclaimed
	for i := range namespaces {
		got, err := reclaimOf(t, kubefake.NewClientset(reclaimCluster(namespaces)...), nil).Namespace(t.Context(), fmt.Sprintf("team-%03d", i))
		if err != nil {
			t.Fatal(err)
		}
		want.Add(got)
	}
	if want.CPU.Cmp(sum.CPU) != 0 || want.Memory.Cmp(sum.Memory) != 0 || want.Storage.Cmp(sum.Storage) != 0 || want.LoadBalancers != sum.LoadBalancers {
		t.Errorf("workers summed %v, want %v", sum, want)
	}
	for _, resource := range []string{"pods", "persistentvolumeclaims", "services"} {
		if in, all := reclaimLists(client, resource); in != ReclaimIndexAfter || all != 1 {
			t.Errorf("%s listed %d times in a namespace, %d cluster-wide; want %d, 1", resource, in, all, ReclaimIndexAfter)
		}
	}
}

// TestReclaimIndexFailureFallsBack: when a cluster-wide list fails, it is
// not tried again, a warning says so, and namespaces are read one by one.
func TestReclaimIndexFailureFallsBack(t *testing.T) {
	client := kubefake.NewClientset(reclaimCluster(4)...)
	client.PrependReactor("list", "persistentvolumeclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == "" {
			return true, nil, apierrors.NewForbidden(corev1.Resource("persistentvolumeclaims"), "", fmt.Errorf("cluster-wide"))
		}
		return false, nil, nil
	})
	var log bytes.Buffer
	x := reclaimOf(t, client, slog.New(slog.NewTextHandler(&log, nil)))
	x.asked.Store(ReclaimIndexAfter)
	for range 3 {
		got, err := x.Namespace(t.Context(), "team-003")
		if err != nil {
			t.Fatal(err)
		}
		// team-003: 3 pods running at 400m, 64+128+192Mi; its PVC and
		// LoadBalancer at i%3 == 0.
		reclaimWant(t, "team-003", got, "1200m", "384Mi", "4Gi", 1)
	}
	if _, all := reclaimLists(client, "persistentvolumeclaims"); all != 1 {
		t.Errorf("PVCs listed cluster-wide %d times, want once", all)
	}
	if in, _ := reclaimLists(client, "persistentvolumeclaims"); in != 3 {
		t.Errorf("PVCs listed %d times in a namespace, want 3", in)
	}
	if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), "namespace by namespace") {
		t.Errorf("log %q, want a warning that namespaces are read one by one", log.String())
	}
}

// TestReclaimedAdd: sums keep exact quantities, and zero is nothing.
func TestReclaimedAdd(t *testing.T) {
	var r report.Reclaimed
	if !r.IsZero() {
		t.Error("the zero Reclaimed: IsZero = false")
	}
	r.Add(freed{cpu: 1500, memory: 1 << 30}.reclaimed())
	r.Add(freed{cpu: 250, memory: 512 << 20, storage: 10 << 30, loadBalancers: 1}.reclaimed())
	reclaimWant(t, "sum", r, "1750m", "1536Mi", "10Gi", 1)
	if r.IsZero() {
		t.Error("a sum of something: IsZero = true")
	}
	if only := (report.Reclaimed{LoadBalancers: 1}); only.IsZero() {
		t.Error("one LoadBalancer: IsZero = true")
	}
}

// A namespace whose lists do not answer delays its DELETE by
// Reads.NamespaceTimeout at most: the read gives up, saying so.
func TestReclaimReadIsBounded(t *testing.T) {
	stalled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer stalled.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: stalled.URL})
	if err != nil {
		t.Fatal(err)
	}
	reads := testReads(cluster.Clients{Kube: client}, minClaimTTL, nil)
	began := time.Now()
	_, err = NewReclaim(reads).Namespace(t.Context(), "team")
	if took := time.Since(began); err == nil || took > reads.NamespaceTimeout()+time.Second {
		t.Errorf("a read that never answers: %v after %v; want an error after %v", err, took, reads.NamespaceTimeout())
	}
}
