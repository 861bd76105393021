package execute

import (
	"encoding/json"
	"testing"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// restorePatch is the part of a workload patch restore writes.
type restorePatch struct {
	Metadata struct {
		ResourceVersion string             `json:"resourceVersion"`
		Annotations     map[string]*string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Replicas *int64 `json:"replicas"`
	} `json:"spec"`
}

func decodeRestorePatch(t *testing.T, data []byte) restorePatch {
	t.Helper()
	var p restorePatch
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// dropsRecord reports whether a patch removes the record and nothing else.
func dropsRecord(p restorePatch) bool {
	v, ok := p.Metadata.Annotations[status.ReplicasAnnotation]
	return ok && v == nil && p.Spec.Replicas == nil
}

func TestRestoreOne(t *testing.T) {
	tests := []struct {
		name       string
		replicas   int64
		record     string // "" means none
		wantEffect string
		// wantReplicas is the count the patch sets; -1 when it sets none.
		wantReplicas int64
		wantDrop     bool
	}{
		{name: "at zero", replicas: 0, record: "3",
			wantEffect: "scale Deployment/web from 0 to 3", wantReplicas: 3, wantDrop: true},
		{name: "scaled up since", replicas: 1, record: "3",
			wantEffect:   "leave Deployment/web at 1 replicas: scaled since nsman scaled it down; drop its record of 3",
			wantReplicas: -1, wantDrop: true},
		{name: "no record", replicas: 2, wantReplicas: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &conflictOnce{Writer: dryRun, patches: [][]byte{nil}} // no conflict
			d := deployment(tt.replicas, "1")
			if tt.record != "" {
				d.SetAnnotations(map[string]string{status.ReplicasAnnotation: tt.record})
			}
			effect, err := RestoreOne(t.Context(), cluster.Clients{}, w, DeploymentsResource, "Deployment", d)
			if err != nil {
				t.Fatal(err)
			}
			if effect != tt.wantEffect {
				t.Errorf("effect %q, want %q", effect, tt.wantEffect)
			}
			patches := w.patches[1:]
			if !tt.wantDrop {
				if len(patches) > 0 {
					t.Errorf("patches %q, want none", patches)
				}
				return
			}
			if len(patches) != 1 {
				t.Fatalf("%d patches, want 1", len(patches))
			}
			p := decodeRestorePatch(t, patches[0])
			if v, ok := p.Metadata.Annotations[status.ReplicasAnnotation]; !ok || v != nil {
				t.Errorf("patch %s does not remove the record", patches[0])
			}
			if p.Metadata.ResourceVersion != "1" {
				t.Errorf("patch %s is not conditional on resourceVersion 1", patches[0])
			}
			switch {
			case tt.wantReplicas < 0 && p.Spec.Replicas != nil:
				t.Errorf("patch %s scales a workload it should leave alone", patches[0])
			case tt.wantReplicas >= 0 && (p.Spec.Replicas == nil || *p.Spec.Replicas != tt.wantReplicas):
				t.Errorf("patch %s: want replicas %d", patches[0], tt.wantReplicas)
			}
		})
	}
}

func TestRestoreOneRecomputesAfterAConflict(t *testing.T) {
	// Listed at zero; scaled up by hand before restore's patch. The retry,
	// conditional on the version read again, leaves the replicas alone and
	// only drops the record.
	fresh := deployment(4, "2")
	fresh.SetAnnotations(map[string]string{status.ReplicasAnnotation: "3"})
	listed := deployment(0, "1")
	listed.SetAnnotations(map[string]string{status.ReplicasAnnotation: "3"})
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{DeploymentsResource: "DeploymentList"}, fresh)
	w := &conflictOnce{Writer: dryRun}

	effect, err := RestoreOne(t.Context(), cluster.Clients{Dynamic: dyn}, w, DeploymentsResource, "Deployment", listed)
	if err != nil {
		t.Fatal(err)
	}
	if want := "leave Deployment/web at 4 replicas: scaled since nsman scaled it down; drop its record of 3"; effect != want {
		t.Errorf("effect %q, want %q", effect, want)
	}
	if len(w.patches) != 2 {
		t.Fatalf("%d patches, want 2", len(w.patches))
	}
	if p := decodeRestorePatch(t, w.patches[1]); p.Metadata.ResourceVersion != "2" || !dropsRecord(p) {
		t.Errorf("retried patch %s: want resourceVersion 2, the record removed and the replicas untouched", w.patches[1])
	}
}
