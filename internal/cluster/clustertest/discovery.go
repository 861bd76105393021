package clustertest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// Forbidden, as a body of APIServer, answers 403; Unavailable 503, as the
// aggregator answers for an APIService whose backend is down.
const (
	Forbidden   = "\x00forbidden"
	Unavailable = "\x00unavailable"
)

// APIServer is a clientset whose API server answers GETs of the paths in
// bodies (JSON), a SelfSubjectAccessReview allowed unless bodies has its
// Refusal, and 404 to anything else; each observe hears every path asked,
// as the server gets it (concurrently).
func APIServer(t *testing.T, bodies map[string]string, observe ...func(path string)) kubernetes.Interface {
	t.Helper()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, o := range observe {
			o(r.URL.Path)
		}
		if r.Method == http.MethodPost && r.URL.Path == accessReviews {
			answerReview(t, w, r, bodies)
			return
		}
		body, ok := bodies[r.URL.Path]
		if !ok || r.Method != http.MethodGet {
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch body {
		case Forbidden:
			w.WriteHeader(http.StatusForbidden)
			body = `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`
		case Unavailable:
			w.WriteHeader(http.StatusServiceUnavailable)
			body = `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"ServiceUnavailable","code":503}`
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

// WithUnavailableGroup adds to bodies, DiscoveryBodies, API group
// group/version (its preferred), whose discovery answers 503.
func WithUnavailableGroup(t *testing.T, bodies map[string]string, group, version string) map[string]string {
	t.Helper()
	var groups map[string]any
	if err := json.Unmarshal([]byte(bodies["/apis"]), &groups); err != nil {
		t.Fatal(err)
	}
	gv := map[string]any{"groupVersion": group + "/" + version, "version": version}
	groups["groups"] = append(groups["groups"].([]any), map[string]any{"name": group, "versions": []any{gv}, "preferredVersion": gv})
	b, err := json.Marshal(groups)
	if err != nil {
		t.Fatal(err)
	}
	bodies["/apis"], bodies["/apis/"+group+"/"+version] = string(b), Unavailable
	return bodies
}

// DiscoveryBodies are the discovery documents of a cluster that serves
// apps/v1, batch/v1, argoproj.io (Rollouts, v1alpha1 preferred over an
// older v0 that must not be used), example.com and other.example.com (both
// with a Widget kind), a cluster-scoped kind with a scale subresource, and
// sleep.example.com's Sleeper, a custom resource without one.
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
		group("apps", "v1"), group("batch", "v1"), group("argoproj.io", "v1alpha1", "v0"), group("example.com", "v1"), group("other.example.com", "v1"), group("cluster.example.com", "v1"), group("sleep.example.com", "v1"),
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
		// A custom resource with no scale subresource: a kind a sleep's
		// patches may name.
		"/apis/sleep.example.com/v1": list("sleep.example.com/v1", resource("sleepers", "Sleeper", true, rw...)),
	}
}

// accessReviews is the path of SelfSubjectAccessReviews.
const accessReviews = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"

// Refusal is the key of bodies that has APIServer refuse an access review
// of verb on resource (plural) of group; its value is not read.
func Refusal(verb, group, resource string) string {
	return "\x00refuse " + verb + " " + resource + "." + group
}

// answerReview answers the SelfSubjectAccessReview r sends: allowed, unless
// bodies has its Refusal.
func answerReview(t *testing.T, w http.ResponseWriter, r *http.Request, bodies map[string]string) {
	// client-go sends it as protobuf or JSON; the deserializer tells which.
	body, err := io.ReadAll(r.Body)
	var obj runtime.Object
	if err == nil {
		obj, err = runtime.Decode(scheme.Codecs.UniversalDeserializer(), body)
	}
	review, ok := obj.(*authorizationv1.SelfSubjectAccessReview)
	if err != nil || !ok || review.Spec.ResourceAttributes == nil {
		t.Errorf("access review %T: %v", obj, err)
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	a := review.Spec.ResourceAttributes
	_, refused := bodies[Refusal(a.Verb, a.Group, a.Resource)]
	review.Status.Allowed = !refused
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(review)
}
