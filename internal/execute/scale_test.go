package execute

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"testing"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/cluster/clustertest"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/policy"
)

// conflictOnce is a writer whose first workload patch meets a conflict, as
// when someone scaled the workload between nsman's read and its write.
type conflictOnce struct {
	write.Writer
	patches [][]byte
}

func (w *conflictOnce) PatchWorkload(_ context.Context, resource schema.GroupVersionResource, _, name string, patch []byte) error {
	w.patches = append(w.patches, patch)
	if len(w.patches) == 1 {
		return apierrors.NewConflict(resource.GroupResource(), name, nil)
	}
	return nil
}

func (w *conflictOnce) Event(context.Context, *eventsv1.Event) error { return nil }

// listed is w as a list of workloads gives it, its template's requests none.
func listed(w *unstructured.Unstructured) *Workload { return &Workload{Object: w} }

// servingAgain is a cluster whose list of Deployments in ns holds fresh
// alone: what a conflict's re-read finds.
func servingAgain(t *testing.T, fresh *unstructured.Unstructured) cluster.Clients {
	t.Helper()
	bodies := clustertest.DiscoveryBodies()
	bodies["/apis/apps/v1/namespaces/ns/deployments"] = `{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{},"items":[` + write.MustJSON(fresh.Object) + `]}`
	return cluster.Clients{Kube: clustertest.APIServer(t, bodies)}
}

func deployment(replicas int64, resourceVersion string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"namespace": "ns", "name": "web", "resourceVersion": resourceVersion},
		"spec":       map[string]any{"replicas": replicas},
	}}
}

func TestSleepReplicasRecomputesAfterAConflict(t *testing.T) {
	// Listed with 3 replicas; scaled to 5 by someone else before nsman's
	// patch. The record must say 5, and the retry be conditional on the
	// version read again.
	w := &conflictOnce{Writer: dryRun}
	clients := servingAgain(t, deployment(5, "2"))

	effect, from, err := Sleep(t.Context(), clients, w, deploymentKind, listed(deployment(3, "1")), policy.SleepTo{})
	if err != nil {
		t.Fatal(err)
	}
	if effect != "scale Deployment/web from 5 to 0" {
		t.Errorf("effect %q", effect)
	}
	if from == nil || SpecReplicas(from.Object) != 5 {
		t.Errorf("scaled from %v, want the workload read again, with 5 replicas (what its scaling frees)", from)
	}
	if len(w.patches) != 2 {
		t.Fatalf("%d patches, want 2", len(w.patches))
	}
	var retry struct {
		Metadata struct {
			ResourceVersion string            `json:"resourceVersion"`
			Annotations     map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec struct{ Replicas int64 } `json:"spec"`
	}
	if err := json.Unmarshal(w.patches[1], &retry); err != nil {
		t.Fatal(err)
	}
	if retry.Metadata.ResourceVersion != "2" || retry.Metadata.Annotations[status.ReplicasAnnotation] != "5" || retry.Spec.Replicas != 0 {
		t.Errorf("retried patch %s: want resourceVersion 2, record 5, replicas 0", w.patches[1])
	}
}

func TestSleepReplicasRecordsTheLastCount(t *testing.T) {
	// A record is the count the workload had when nsman last scaled it to
	// zero: one left by an earlier scale-down, since undone by hand, is
	// overwritten; a workload at zero keeps its record and is not written.
	tests := []struct {
		name       string
		replicas   int64
		record     string // "" means none
		wantRecord string // "" means no patch
	}{
		{name: "no record", replicas: 2, wantRecord: "2"},
		{name: "an old record", replicas: 2, record: "7", wantRecord: "2"},
		{name: "at zero with a record", replicas: 0, record: "7"},
		{name: "at zero without a record", replicas: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &conflictOnce{Writer: dryRun, patches: [][]byte{nil}} // no conflict
			d := deployment(tt.replicas, "1")
			if tt.record != "" {
				d.SetAnnotations(map[string]string{status.ReplicasAnnotation: tt.record})
			}
			l := listed(d)
			effect, from, err := Sleep(t.Context(), cluster.Clients{}, w, deploymentKind, l, policy.SleepTo{})
			if err != nil {
				t.Fatal(err)
			}
			patches := w.patches[1:]
			if tt.wantRecord == "" {
				if len(patches) > 0 || effect != "" || from != nil {
					t.Errorf("effect %q, patches %q, scaled from %v; want none", effect, patches, from)
				}
				return
			}
			if from != l {
				t.Errorf("scaled from %v, want the workload as listed", from)
			}
			if len(patches) != 1 {
				t.Fatalf("%d patches, want 1", len(patches))
			}
			var patch struct {
				Metadata struct {
					ResourceVersion string            `json:"resourceVersion"`
					Annotations     map[string]string `json:"annotations"`
				} `json:"metadata"`
				Spec struct{ Replicas int64 } `json:"spec"`
			}
			if err := json.Unmarshal(patches[0], &patch); err != nil {
				t.Fatal(err)
			}
			if patch.Metadata.ResourceVersion != "1" || patch.Metadata.Annotations[status.ReplicasAnnotation] != tt.wantRecord || patch.Spec.Replicas != 0 {
				t.Errorf("patch %s: want resourceVersion 1, record %s, replicas 0", patches[0], tt.wantRecord)
			}
		})
	}
}

// dryRun writes nothing: the test writers embed it and override what they
// record.
var dryRun = write.New(nil, nil, nil, nil, true)

// cutOff is a writer whose workload patches end with the action's
// deadline, as client-go says it: an error that wraps
// context.DeadlineExceeded.
type cutOff struct{ write.Writer }

func (cutOff) PatchWorkload(_ context.Context, resource schema.GroupVersionResource, namespace, name string, _ []byte) error {
	return &url.Error{Op: "Patch", URL: "https://api/apis/apps/v1/namespaces/" + namespace + "/deployments/" + name, Err: context.DeadlineExceeded}
}

// A patch cut by the action's deadline is an error of the sleep, and of a
// wake: not the workload said scaled (retry.RetryOnConflict alone answers
// nil for it, and a SLEEP measured on the control plane reported 40
// Deployments scaled of which 6 were).
func TestChangeCutByTheDeadlineFails(t *testing.T) {
	effect, from, err := Sleep(t.Context(), cluster.Clients{}, cutOff{dryRun}, deploymentKind, listed(deployment(3, "1")), policy.SleepTo{})
	if !errors.Is(err, context.DeadlineExceeded) || effect != "" || from != nil {
		t.Errorf("sleep: effect %q, scaled from %v, error %v; want no effect and the deadline's error", effect, from, err)
	}
	asleep := deployment(0, "1")
	asleep.SetAnnotations(map[string]string{status.ReplicasAnnotation: "3"})
	if effect, err := Wake(t.Context(), cluster.Clients{}, cutOff{dryRun}, deploymentKind, listed(asleep)); !errors.Is(err, context.DeadlineExceeded) || effect != "" {
		t.Errorf("wake: effect %q, error %v; want no effect and the deadline's error", effect, err)
	}
}
