package execute

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
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

// TestRestore lists a namespace's Deployments and StatefulSets (as the
// API server pages them) and restores those nsman scaled down: one scaled
// back, one left as someone scaled it since, one never scaled; a dry run
// says the same and writes nothing.
func TestRestore(t *testing.T) {
	item := func(kind, name string, replicas int, record string) string {
		annotations := ""
		if record != "" {
			annotations = fmt.Sprintf(`,"annotations":{%q:%q}`, status.ReplicasAnnotation, record)
		}
		return fmt.Sprintf(`{"apiVersion":"apps/v1","kind":%q,"metadata":{"name":%q,"namespace":"team-a","resourceVersion":"1"%s},"spec":{"replicas":%d}}`,
			kind, name, annotations, replicas)
	}
	lists := map[string]string{
		"/apis/apps/v1/namespaces/team-a/deployments":  `{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{},"items":[` + item("Deployment", "web", 0, "3") + `,` + item("Deployment", "api", 2, "4") + `]}`,
		"/apis/apps/v1/namespaces/team-a/statefulsets": `{"kind":"StatefulSetList","apiVersion":"apps/v1","metadata":{},"items":[` + item("StatefulSet", "db", 1, "") + `]}`,
	}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := lists[r.URL.Path]
		if !ok || r.Method != http.MethodGet {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(server.Close)
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: server.URL})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"scale Deployment/web from 0 to 3", "leave Deployment/api at 2 replicas: scaled since nsman scaled it down; drop its record of 4"}
	for _, dryRun := range []bool{true, false} {
		web, api := deployment(0, "1"), deployment(2, "1")
		web.SetNamespace("team-a")
		api.SetNamespace("team-a")
		api.SetName("api")
		dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), web, api)
		effects, err := Restore(t.Context(), cluster.Clients{Kube: kube, Dynamic: dyn}, "team-a", dryRun)
		if err != nil {
			t.Fatalf("dry run %v: %v", dryRun, err)
		}
		if !slices.Equal(effects, want) {
			t.Errorf("dry run %v: %q, want %q", dryRun, effects, want)
		}
		var patches int
		for _, a := range dyn.Actions() {
			if a.GetVerb() == "patch" {
				patches++
			}
		}
		if wantPatches := map[bool]int{true: 0, false: 2}[dryRun]; patches != wantPatches {
			t.Errorf("dry run %v: %d patches, want %d", dryRun, patches, wantPatches)
		}
	}
}
