package execute

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
)

// forbidden, as a body of apiServer, answers 403.
const forbidden = "\x00forbidden"

// apiServer is a clientset whose API server answers GETs of the paths in
// bodies (JSON), and 404 to anything else.
func apiServer(t *testing.T, bodies map[string]string) kubernetes.Interface {
	t.Helper()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := bodies[r.URL.Path]
		if !ok || r.Method != http.MethodGet {
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if body == forbidden {
			w.WriteHeader(http.StatusForbidden)
			body = `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`
		}
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(server.Close)
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: server.URL})
	if err != nil {
		t.Fatal(err)
	}
	return kube
}

// discoveryBodies are the discovery documents of a cluster that serves
// apps/v1, batch/v1, argoproj.io (Rollouts, v1alpha1 preferred over an
// older v0 that must not be used), example.com and other.example.com (both
// with a Widget kind), and a cluster-scoped kind with a scale subresource.
func discoveryBodies() map[string]string {
	resource := func(name, kind string, namespaced bool, verbs ...string) map[string]any {
		return map[string]any{"name": name, "singularName": "", "kind": kind, "namespaced": namespaced, "verbs": verbs}
	}
	list := func(gv string, resources ...map[string]any) string {
		b, _ := json.Marshal(map[string]any{"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources})
		return string(b)
	}
	group := func(name string, versions ...string) map[string]any {
		var vs []map[string]any
		for _, v := range versions {
			vs = append(vs, map[string]any{"groupVersion": name + "/" + v, "version": v})
		}
		return map[string]any{"name": name, "versions": vs, "preferredVersion": vs[0]}
	}
	groups, _ := json.Marshal(map[string]any{"kind": "APIGroupList", "apiVersion": "v1", "groups": []any{
		group("apps", "v1"), group("batch", "v1"), group("argoproj.io", "v1alpha1", "v0"), group("example.com", "v1"), group("other.example.com", "v1"), group("cluster.example.com", "v1"),
	}})
	rw := []string{"get", "list", "patch", "update"}
	return map[string]string{
		"/api":    `{"kind":"APIVersions","versions":["v1"]}`,
		"/apis":   string(groups),
		"/api/v1": list("v1", resource("pods", "Pod", true, rw...), resource("replicationcontrollers", "ReplicationController", true, rw...), resource("replicationcontrollers/scale", "Scale", true, "get", "patch")),
		"/apis/apps/v1": list("apps/v1", resource("deployments", "Deployment", true, rw...), resource("deployments/scale", "Scale", true, "get", "patch"),
			resource("replicasets", "ReplicaSet", true, rw...), resource("replicasets/scale", "Scale", true, "get", "patch"), resource("daemonsets", "DaemonSet", true, rw...)),
		"/apis/batch/v1":               list("batch/v1", resource("cronjobs", "CronJob", true, rw...), resource("jobs", "Job", true, rw...)),
		"/apis/argoproj.io/v1alpha1":   list("argoproj.io/v1alpha1", resource("rollouts", "Rollout", true, rw...), resource("rollouts/scale", "Scale", true, "get", "patch")),
		"/apis/argoproj.io/v0":         list("argoproj.io/v0", resource("rollouts", "Rollout", true, rw...), resource("rollouts/scale", "Scale", true, "get", "patch")),
		"/apis/example.com/v1":         list("example.com/v1", resource("widgets", "Widget", true, rw...), resource("widgets/scale", "Scale", true, "get", "patch"), resource("gadgets", "Gadget", true, "get", "list"), resource("gadgets/scale", "Scale", true, "get", "patch")),
		"/apis/other.example.com/v1":   list("other.example.com/v1", resource("widgets", "Widget", true, rw...), resource("widgets/scale", "Scale", true, "get", "patch")),
		"/apis/cluster.example.com/v1": list("cluster.example.com/v1", resource("pools", "Pool", false, rw...), resource("pools/scale", "Scale", false, "get", "patch")),
	}
}

func TestKindsResolve(t *testing.T) {
	tests := []struct {
		name      string
		selectors []policy.Selector
		want      []string // group/version/resource of each selection
		wantErr   string   // "" for none
	}{
		{name: "none: Deployments and StatefulSets", want: []string{"apps/v1/deployments", "apps/v1/statefulsets"}},
		{name: "known kinds", selectors: []policy.Selector{{Kind: policy.KindCronJob}, {Kind: policy.KindScaledObject, Labels: map[string]string{"a": "b"}}},
			want: []string{"batch/v1/cronjobs", "keda.sh/v1alpha1/scaledobjects"}},
		{name: "a kind found, in its preferred version", selectors: []policy.Selector{{Kind: "rollout"}}, want: []string{"argoproj.io/v1alpha1/rollouts"}},
		{name: "a kind with its group", selectors: []policy.Selector{{Kind: "Rollout.argoproj.io"}}, want: []string{"argoproj.io/v1alpha1/rollouts"}},
		{name: "a built-in kind found", selectors: []policy.Selector{{Kind: "ReplicaSet"}, {Kind: "replicationcontroller"}}, want: []string{"apps/v1/replicasets", "v1/replicationcontrollers"}},
		{name: "a kind of two groups, named with one", selectors: []policy.Selector{{Kind: "Widget.other.example.com"}}, want: []string{"other.example.com/v1/widgets"}},
		{name: "a kind of two groups", selectors: []policy.Selector{{Kind: "Widget"}}, wantErr: "selectors[0]: kind Widget is served by several API groups (Widget.example.com, Widget.other.example.com): name one as Kind.group"},
		{name: "a kind in another group", selectors: []policy.Selector{{Kind: "Rollout.example.com"}}, wantErr: "selectors[0]: kind Rollout.example.com: the cluster serves no kind of that name with a scale subresource"},
		{name: "a kind without a scale subresource", selectors: []policy.Selector{{Kind: "Deployment"}, {Kind: "Job"}}, wantErr: "selectors[1]: kind Job: the cluster serves no kind of that name with a scale subresource"},
		{name: "a kind that cannot be patched", selectors: []policy.Selector{{Kind: "Gadget"}}, wantErr: "selectors[0]: kind Gadget: the cluster serves no kind of that name with a scale subresource"},
		{name: "a cluster-scoped kind", selectors: []policy.Selector{{Kind: "Pool"}}, wantErr: "selectors[0]: kind Pool: the cluster serves no kind of that name with a scale subresource"},
		{name: "kinds nobody serves", selectors: []policy.Selector{{Kind: "Rollout.argoproj.io"}, {Kind: "Nothing"}, {Kind: "Nothing.else.io"}},
			wantErr: "selectors[1]: kind Nothing: the cluster serves no kind of that name with a scale subresource\nselectors[2]: kind Nothing.else.io: the cluster serves no kind of that name with a scale subresource"},
	}
	kube := apiServer(t, discoveryBodies())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var kinds Kinds
			got, err := kinds.Resolve(kube, tt.selectors)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var resources []string
			for i, s := range got {
				resources = append(resources, s.Kind.Resource.GroupVersion().String()+"/"+s.Kind.Resource.Resource)
				if i < len(tt.selectors) && !reflect.DeepEqual(s.Labels, tt.selectors[i].Labels) {
					t.Errorf("selection %d labels %v, want %v", i, s.Labels, tt.selectors[i].Labels)
				}
			}
			if strings.Join(resources, " ") != strings.Join(tt.want, " ") {
				t.Errorf("resolved %q, want %q", resources, tt.want)
			}
		})
	}
}

// Discovery is asked once per Kinds, however many selectors it resolves.
func TestKindsDiscoverOnce(t *testing.T) {
	bodies := discoveryBodies()
	var asked int
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/apis" {
			asked++
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, bodies[r.URL.Path])
	}))
	t.Cleanup(server.Close)
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: server.URL})
	if err != nil {
		t.Fatal(err)
	}
	var kinds Kinds
	for range 3 {
		if _, err := kinds.Resolve(kube, []policy.Selector{{Kind: "Rollout"}, {Kind: "ReplicaSet"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := kinds.All(kube); err != nil {
		t.Fatal(err)
	}
	if asked != 1 {
		t.Errorf("discovery asked %d times, want 1", asked)
	}
	var unused Kinds
	if _, err := unused.Resolve(kube, []policy.Selector{{Kind: policy.KindCronJob}}); err != nil || asked != 1 {
		t.Errorf("known kinds alone: discovery asked %d times in all, error %v; want no more", asked, err)
	}
}

func TestKindsAll(t *testing.T) {
	var kinds Kinds
	all, err := kinds.All(apiServer(t, discoveryBodies()))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range all {
		got = append(got, s.Kind.Name+" "+s.Kind.Resource.GroupVersion().String())
	}
	want := []string{"Deployment apps/v1", "StatefulSet apps/v1", "CronJob batch/v1", "ScaledObject keda.sh/v1alpha1",
		"ReplicationController v1", "ReplicaSet apps/v1", "Rollout argoproj.io/v1alpha1", "Widget example.com/v1", "Widget other.example.com/v1"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("all kinds:\n%q\nwant\n%q", got, want)
	}
}

// workload is an object of kind with the given spec and annotations.
func workload(kind string, spec map[string]any, annotations map[string]string) *unstructured.Unstructured {
	w := &unstructured.Unstructured{Object: map[string]any{"kind": kind, "metadata": map[string]any{"name": "w", "namespace": "ns"}, "spec": spec}}
	if annotations != nil {
		w.SetAnnotations(annotations)
	}
	return w
}

func TestWays(t *testing.T) {
	const (
		replicasRec = status.ReplicasAnnotation
		suspendRec  = status.SuspendAnnotation
		pausedRec   = status.PausedReplicasAnnotation
	)
	tests := []struct {
		name      string
		way       way
		w         *unstructured.Unstructured
		wantSleep string // the patch, "" for none
		wantWake  string // the patch, "" for none; "error" for an error
		sleepSays string
		wakeSays  string
	}{
		{name: "replicas at 3", way: replicas{}, w: workload("Rollout", map[string]any{"replicas": int64(3)}, nil),
			wantSleep: `{"metadata":{"annotations":{"` + replicasRec + `":"3"}},"spec":{"replicas":0}}`, sleepSays: "scale Rollout/w from 3 to 0"},
		{name: "replicas unset count 1", way: replicas{}, w: workload("Rollout", map[string]any{}, nil),
			wantSleep: `{"metadata":{"annotations":{"` + replicasRec + `":"1"}},"spec":{"replicas":0}}`, sleepSays: "scale Rollout/w from 1 to 0"},
		{name: "replicas asleep", way: replicas{}, w: workload("Rollout", map[string]any{"replicas": int64(0)}, map[string]string{replicasRec: "3"}),
			wantWake: `{"metadata":{"annotations":{"` + replicasRec + `":null}},"spec":{"replicas":3}}`, wakeSays: "scale Rollout/w from 0 to 3"},
		{name: "replicas scaled since", way: replicas{}, w: workload("Rollout", map[string]any{"replicas": int64(2)}, map[string]string{replicasRec: "3"}),
			wantSleep: `{"metadata":{"annotations":{"` + replicasRec + `":"2"}},"spec":{"replicas":0}}`, sleepSays: "scale Rollout/w from 2 to 0",
			wantWake: `{"metadata":{"annotations":{"` + replicasRec + `":null}}}`, wakeSays: "leave Rollout/w at 2 replicas: scaled since nsman scaled it down; drop its record of 3"},
		{name: "replicas with a forged record", way: replicas{}, w: workload("Rollout", map[string]any{"replicas": int64(0)}, map[string]string{replicasRec: "-1"}), wantWake: "error"},
		{name: "replicas with a huge record", way: replicas{}, w: workload("Rollout", map[string]any{"replicas": int64(0)}, map[string]string{replicasRec: "9999999999"}), wantWake: "error"},

		{name: "cronjob running", way: suspend{}, w: workload("CronJob", map[string]any{"schedule": "* * * * *"}, nil),
			wantSleep: `{"metadata":{"annotations":{"` + suspendRec + `":"false"}},"spec":{"suspend":true}}`, sleepSays: "suspend CronJob/w"},
		{name: "cronjob suspended before", way: suspend{}, w: workload("CronJob", map[string]any{"suspend": true}, nil)},
		{name: "cronjob asleep", way: suspend{}, w: workload("CronJob", map[string]any{"suspend": true}, map[string]string{suspendRec: "false"}),
			wantWake: `{"metadata":{"annotations":{"` + suspendRec + `":null}},"spec":{"suspend":false}}`, wakeSays: "resume CronJob/w"},
		{name: "cronjob resumed since", way: suspend{}, w: workload("CronJob", map[string]any{"suspend": false}, map[string]string{suspendRec: "false"}),
			wantSleep: `{"metadata":{"annotations":{"` + suspendRec + `":"false"}},"spec":{"suspend":true}}`, sleepSays: "suspend CronJob/w",
			wantWake: `{"metadata":{"annotations":{"` + suspendRec + `":null}}}`, wakeSays: "leave CronJob/w running: resumed since nsman suspended it; drop its record"},
		{name: "cronjob with a forged record", way: suspend{}, w: workload("CronJob", map[string]any{"suspend": true}, map[string]string{suspendRec: "true"}), wantWake: "error"},

		{name: "scaledobject unpaused", way: pause{}, w: workload("ScaledObject", map[string]any{}, nil),
			wantSleep: `{"metadata":{"annotations":{"` + KedaPausedReplicas + `":"0","` + pausedRec + `":""}}}`, sleepSays: "pause ScaledObject/w at 0 replicas"},
		{name: "scaledobject paused at 2", way: pause{}, w: workload("ScaledObject", map[string]any{}, map[string]string{KedaPausedReplicas: "2"}),
			wantSleep: `{"metadata":{"annotations":{"` + KedaPausedReplicas + `":"0","` + pausedRec + `":"2"}}}`, sleepSays: "pause ScaledObject/w at 0 replicas (paused at 2 before)"},
		{name: "scaledobject paused at 0 before", way: pause{}, w: workload("ScaledObject", map[string]any{}, map[string]string{KedaPausedReplicas: "0"})},
		{name: "scaledobject asleep, unpaused before", way: pause{}, w: workload("ScaledObject", map[string]any{}, map[string]string{KedaPausedReplicas: "0", pausedRec: ""}),
			wantWake: `{"metadata":{"annotations":{"` + KedaPausedReplicas + `":null,"` + pausedRec + `":null}}}`, wakeSays: "unpause ScaledObject/w"},
		{name: "scaledobject asleep, paused at 2 before", way: pause{}, w: workload("ScaledObject", map[string]any{}, map[string]string{KedaPausedReplicas: "0", pausedRec: "2"}),
			wantWake: `{"metadata":{"annotations":{"` + KedaPausedReplicas + `":"2","` + pausedRec + `":null}}}`, wakeSays: "pause ScaledObject/w at 2 replicas again, as before"},
		{name: "scaledobject unpaused since", way: pause{}, w: workload("ScaledObject", map[string]any{}, map[string]string{pausedRec: "2"}),
			wantSleep: `{"metadata":{"annotations":{"` + KedaPausedReplicas + `":"0","` + pausedRec + `":""}}}`, sleepSays: "pause ScaledObject/w at 0 replicas",
			wantWake: `{"metadata":{"annotations":{"` + pausedRec + `":null}}}`, wakeSays: "leave ScaledObject/w: its pause changed since nsman paused it; drop its record"},
		{name: "scaledobject with a forged record", way: pause{}, w: workload("ScaledObject", map[string]any{}, map[string]string{KedaPausedReplicas: "0", pausedRec: "all"}), wantWake: "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := tt.w.GetKind() + "/w"
			patch, says := tt.way.sleep(id, tt.w)
			if got := patchJSON(patch); got != tt.wantSleep || says != tt.sleepSays {
				t.Errorf("sleep: %s %q, want %s %q", got, says, tt.wantSleep, tt.sleepSays)
			}
			patch, says, err := tt.way.wake(id, tt.w)
			if tt.wantWake == "error" {
				if err == nil || !strings.HasPrefix(err.Error(), id+": annotation ") {
					t.Errorf("wake: error %v, want one naming %s and its record", err, id)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := patchJSON(patch); got != tt.wantWake || says != tt.wakeSays {
				t.Errorf("wake: %s %q, want %s %q", got, says, tt.wantWake, tt.wakeSays)
			}
		})
	}
}

// patchJSON is patch as JSON, "" for nil.
func patchJSON(patch map[string]any) string {
	if patch == nil {
		return ""
	}
	b, _ := json.Marshal(patch)
	return string(b)
}
