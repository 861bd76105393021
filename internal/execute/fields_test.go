package execute

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/internal/listpage"
	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/write"
)

// A workload as SCALE_DOWN lists it keeps what a change reads (name,
// version, replicas, their record, the template's requests) and nothing of
// the rest, however large.
func TestWorkloadFieldsKeepWhatIsRead(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	data := `{"kind":"DeploymentList","metadata":{},"items":[{"metadata":{"name":"web","namespace":"team","resourceVersion":"7",` +
		`"annotations":{"` + status.ReplicasAnnotation + `":"3","other":"` + big[:200<<10] + `"}},"spec":{"replicas":2,"template":{"spec":{` +
		`"initContainers":[{"name":"proxy","restartPolicy":"Always","resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}],` +
		`"containers":[{"name":"web","args":["` + big + `"],"resources":{"requests":{"cpu":"400m","memory":"256Mi"}}}]}}}}]}`
	var got []*unstructured.Unstructured
	if _, err := listpage.DecodeStreamed(strings.NewReader(data), func(f *WorkloadFields) error {
		w, err := f.Unstructured(deploymentKind)
		got = append(got, w)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d workloads, want 1", len(got))
	}
	w := got[0]
	if w.GetName() != "web" || w.GetNamespace() != "team" || w.GetResourceVersion() != "7" || w.GetKind() != "Deployment" || w.GetAPIVersion() != "apps/v1" {
		t.Errorf("metadata %v", w.Object["metadata"])
	}
	if a := w.GetAnnotations(); len(a) != 1 || a[status.ReplicasAnnotation] != "3" {
		t.Errorf("annotations %v, want the record alone", a)
	}
	if SpecReplicas(w) != 2 {
		t.Errorf("replicas %d, want 2", SpecReplicas(w))
	}
	if freed := probe.ScalingFrees(w); freed.CPU.String() != "1" || freed.Memory.String() != "640Mi" || !freed.Storage.IsZero() || freed.LoadBalancers != 0 {
		t.Errorf("frees %s CPU, %s memory, %s storage, %d LoadBalancers; want 1, 640Mi, 0, 0", freed.CPU.String(), freed.Memory.String(), freed.Storage.String(), freed.LoadBalancers)
	}
	if size := len(write.MustJSON(w.Object)); size > 1<<10 {
		t.Errorf("%d bytes kept of a workload of more than 1 MiB", size)
	}
}
