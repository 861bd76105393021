package execute

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/cluster/clustertest"
	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/internal/status"
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

func TestWakeReplicas(t *testing.T) {
	tests := []struct {
		name       string
		replicas   int64
		record     string // "" means none
		asleepAt   string // status.ReplicasAsleepAnnotation, "" for none
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
		// Put to sleep at 1 (params.replicas), which its record says: still
		// asleep, whatever the policy says now, and nsman restore knows none.
		{name: "at the 1 it was left at", replicas: 1, record: "3", asleepAt: "1",
			wantEffect: "scale Deployment/web from 1 to 3", wantReplicas: 3, wantDrop: true},
		{name: "scaled up since it was left at 1", replicas: 2, record: "3", asleepAt: "1",
			wantEffect:   "leave Deployment/web at 2 replicas: scaled since nsman scaled it down; drop its record of 3",
			wantReplicas: -1, wantDrop: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &conflictOnce{Writer: dryRun, patches: [][]byte{nil}} // no conflict
			d := deployment(tt.replicas, "1")
			if tt.record != "" {
				d.SetAnnotations(map[string]string{status.ReplicasAnnotation: tt.record})
			}
			if tt.asleepAt != "" {
				d.SetAnnotations(map[string]string{status.ReplicasAnnotation: tt.record, status.ReplicasAsleepAnnotation: tt.asleepAt})
			}
			effect, err := Wake(t.Context(), cluster.Clients{}, w, deploymentKind, listed(d))
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

func TestWakeReplicasRecomputesAfterAConflict(t *testing.T) {
	// Listed at zero; scaled up by hand before restore's patch. The retry,
	// conditional on the version read again, leaves the replicas alone and
	// only drops the record.
	fresh := deployment(4, "2")
	fresh.SetAnnotations(map[string]string{status.ReplicasAnnotation: "3"})
	asListed := deployment(0, "1")
	asListed.SetAnnotations(map[string]string{status.ReplicasAnnotation: "3"})
	w := &conflictOnce{Writer: dryRun}

	effect, err := Wake(t.Context(), servingAgain(t, fresh), w, deploymentKind, listed(asListed))
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

// TestRestore lists, in a namespace, the workloads of every kind nsman
// puts to sleep (as the API server pages them; ScaledObjects not served)
// and wakes those it put to sleep: one scaled back, one left as someone
// scaled it since, one never scaled, a CronJob resumed, a Rollout (found by
// discovery) scaled back, a kind it may not list skipped; a dry run says
// the same and writes nothing.
func TestRestore(t *testing.T) {
	item := func(kind, name string, spec, record string) string {
		annotations := ""
		if record != "" {
			annotations = `,"annotations":{` + record + `}`
		}
		return fmt.Sprintf(`{"kind":%q,"metadata":{"name":%q,"namespace":"team-a","resourceVersion":"1"%s},"spec":{%s}}`, kind, name, annotations, spec)
	}
	list := func(items ...string) string {
		return `{"kind":"List","apiVersion":"v1","metadata":{},"items":[` + strings.Join(items, ",") + `]}`
	}
	replicasRecord := func(n string) string { return fmt.Sprintf("%q:%q", status.ReplicasAnnotation, n) }
	bodies := clustertest.DiscoveryBodies()
	for path, body := range map[string]string{
		"/apis/apps/v1/namespaces/team-a/deployments":           list(item("Deployment", "web", `"replicas":0`, replicasRecord("3")), item("Deployment", "api", `"replicas":2`, replicasRecord("4"))),
		"/apis/apps/v1/namespaces/team-a/statefulsets":          list(item("StatefulSet", "db", `"replicas":1`, "")),
		"/apis/batch/v1/namespaces/team-a/cronjobs":             list(item("CronJob", "report", `"suspend":true`, fmt.Sprintf("%q:%q", status.SuspendAnnotation, "false"))),
		"/apis/argoproj.io/v1alpha1/namespaces/team-a/rollouts": list(item("Rollout", "canary", `"replicas":0`, replicasRecord("5"))),
		"/apis/apps/v1/namespaces/team-a/replicasets":           list(),
		"/api/v1/namespaces/team-a/replicationcontrollers":      list(),
		"/apis/example.com/v1/namespaces/team-a/widgets":        list(),
		"/apis/other.example.com/v1/namespaces/team-a/widgets":  clustertest.Forbidden,
	} {
		bodies[path] = body
	}
	want := []string{
		"scale Deployment/web from 0 to 3", "leave Deployment/api at 2 replicas: scaled since nsman scaled it down; drop its record of 4",
		"resume CronJob/report", "scale Rollout/canary from 0 to 5",
	}
	for _, dryRun := range []bool{true, false} {
		kube, patches := patchingAPIServer(t, bodies)
		effects, skipped, err := Restore(t.Context(), cluster.Clients{Kube: kube}, "team-a", dryRun)
		if err != nil {
			t.Fatalf("dry run %v: %v", dryRun, err)
		}
		if want := []string{"widgets.other.example.com"}; !slices.Equal(skipped, want) {
			t.Errorf("dry run %v: skipped %q, want %q", dryRun, skipped, want)
		}
		if !slices.Equal(effects, want) {
			t.Errorf("dry run %v: %q, want %q", dryRun, effects, want)
		}
		var patched []string
		for _, path := range *patches {
			parts := strings.Split(path, "/")
			patched = append(patched, parts[len(parts)-2])
		}
		if wantPatched := map[bool]string{true: "", false: "deployments deployments cronjobs rollouts"}[dryRun]; strings.Join(patched, " ") != wantPatched {
			t.Errorf("dry run %v: patched %q, want %q", dryRun, patched, wantPatched)
		}
	}
}

// A known kind restore may not list is an error, not skipped: nsman writes
// to it by default.
func TestRestoreForbiddenKnownKind(t *testing.T) {
	bodies := clustertest.DiscoveryBodies()
	bodies["/apis/apps/v1/namespaces/team-a/deployments"] = clustertest.Forbidden
	_, skipped, err := Restore(t.Context(), cluster.Clients{Kube: clustertest.APIServer(t, bodies)}, "team-a", true)
	if err == nil || !strings.Contains(err.Error(), "list deployments.apps in team-a: ") || len(skipped) != 0 {
		t.Errorf("error %v, skipped %q; want the list of Deployments refused, nothing skipped", err, skipped)
	}
}

// Restore lists a namespace's kinds at once: the API server holds each
// list until three are in flight together (or a second has passed).
func TestRestoreListsTheKindsAtOnce(t *testing.T) {
	bodies := clustertest.DiscoveryBodies()
	for _, path := range []string{"/apis/apps/v1/namespaces/team-a/deployments", "/apis/apps/v1/namespaces/team-a/statefulsets",
		"/apis/batch/v1/namespaces/team-a/cronjobs", "/apis/argoproj.io/v1alpha1/namespaces/team-a/rollouts"} {
		bodies[path] = `{"kind":"List","apiVersion":"v1","metadata":{},"items":[]}`
	}
	const together = 3
	var inFlight, most atomic.Int64
	kube := clustertest.APIServer(t, bodies, func(path string) {
		if !strings.Contains(path, "/namespaces/team-a/") {
			return
		}
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		for end := time.Now().Add(time.Second); most.Load() < together && time.Now().Before(end); {
			time.Sleep(5 * time.Millisecond)
		}
	})
	if _, _, err := Restore(t.Context(), cluster.Clients{Kube: kube, Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())}, "team-a", false); err != nil {
		t.Fatal(err)
	}
	if got := most.Load(); got < together {
		t.Errorf("at most %d lists of team-a in flight together, want %d or more", got, together)
	}
}

// A workload two selections of its kind both select (labels app=web and
// tier=front) is changed once, not a second time from the copy listed
// before the first change.
func TestEachKindChangesAWorkloadSelectedTwiceOnce(t *testing.T) {
	bodies := clustertest.DiscoveryBodies()
	bodies["/apis/apps/v1/namespaces/team-a/deployments"] = `{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{},"items":[` +
		`{"metadata":{"name":"web","namespace":"team-a","resourceVersion":"1","labels":{"app":"web","tier":"front"}},"spec":{"replicas":2}}]}`
	deployment, _ := probe.KnownKind("Deployment")
	selections := []probe.Selection{{Kind: deployment, Labels: map[string]string{"app": "web"}}, {Kind: deployment, Labels: map[string]string{"tier": "front"}}}
	var changed []string
	_, _, err := EachKind(t.Context(), cluster.Clients{Kube: clustertest.APIServer(t, bodies)}, "team-a", selections, false,
		func(kind probe.Kind, w *Workload) (string, error) {
			changed = append(changed, kind.Name+"/"+w.Object.GetName())
			return "", nil
		})
	if err != nil || !slices.Equal(changed, []string{"Deployment/web"}) {
		t.Errorf("changed %q, error %v; want Deployment/web once", changed, err)
	}
}

// patchingAPIServer is clustertest.APIServer's answers to GETs, and a
// PATCH of any path answered 200 with an empty object, its path recorded
// in patches.
func patchingAPIServer(t *testing.T, bodies map[string]string) (kubernetes.Interface, *[]string) {
	t.Helper()
	var patches []string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPatch {
			patches = append(patches, r.URL.Path)
			_, _ = io.WriteString(w, "{}")
			return
		}
		body, ok := bodies[r.URL.Path]
		switch {
		case !ok || r.Method != http.MethodGet:
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`, http.StatusNotFound)
		case body == clustertest.Forbidden:
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`)
		default:
			_, _ = io.WriteString(w, body)
		}
	}))
	t.Cleanup(server.Close)
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: server.URL})
	if err != nil {
		t.Fatal(err)
	}
	return kube, &patches
}
