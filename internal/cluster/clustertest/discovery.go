package clustertest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Forbidden, as a body of APIServer, answers 403.
const Forbidden = "\x00forbidden"

// APIServer is a clientset whose API server answers GETs of the paths in
// bodies (JSON), and 404 to anything else; each observe hears every path
// asked, as the server gets it (concurrently).
func APIServer(t *testing.T, bodies map[string]string, observe ...func(path string)) kubernetes.Interface {
	t.Helper()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, o := range observe {
			o(r.URL.Path)
		}
		body, ok := bodies[r.URL.Path]
		if !ok || r.Method != http.MethodGet {
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if body == Forbidden {
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

// DiscoveryBodies are the discovery documents of a cluster that serves
// apps/v1, batch/v1, argoproj.io (Rollouts, v1alpha1 preferred over an
// older v0 that must not be used), example.com and other.example.com (both
// with a Widget kind), and a cluster-scoped kind with a scale subresource.
func DiscoveryBodies() map[string]string {
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
			resource("statefulsets", "StatefulSet", true, rw...), resource("statefulsets/scale", "Scale", true, "get", "patch"),
			resource("replicasets", "ReplicaSet", true, rw...), resource("replicasets/scale", "Scale", true, "get", "patch"), resource("daemonsets", "DaemonSet", true, rw...)),
		"/apis/batch/v1":               list("batch/v1", resource("cronjobs", "CronJob", true, rw...), resource("jobs", "Job", true, rw...)),
		"/apis/argoproj.io/v1alpha1":   list("argoproj.io/v1alpha1", resource("rollouts", "Rollout", true, rw...), resource("rollouts/scale", "Scale", true, "get", "patch")),
		"/apis/argoproj.io/v0":         list("argoproj.io/v0", resource("rollouts", "Rollout", true, rw...), resource("rollouts/scale", "Scale", true, "get", "patch")),
		"/apis/example.com/v1":         list("example.com/v1", resource("widgets", "Widget", true, rw...), resource("widgets/scale", "Scale", true, "get", "patch"), resource("gadgets", "Gadget", true, "get", "list"), resource("gadgets/scale", "Scale", true, "get", "patch")),
		"/apis/other.example.com/v1":   list("other.example.com/v1", resource("widgets", "Widget", true, rw...), resource("widgets/scale", "Scale", true, "get", "patch")),
		"/apis/cluster.example.com/v1": list("cluster.example.com/v1", resource("pools", "Pool", false, rw...), resource("pools/scale", "Scale", false, "get", "patch")),
	}
}
