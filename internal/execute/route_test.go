package execute

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/policy"
)

// fakePod is a Pod as the API server filters it by field.
type fakePod struct {
	namespace, name, ip string
	uid                 types.UID
	labels              map[string]string
	phase               corev1.PodPhase
	hostNetwork         bool
	deleting            bool
}

// sinkPod is Pod web-1 of team-a, running at 10.0.0.5, which Service sink
// selects.
func sinkPod(mods ...func(*fakePod)) fakePod {
	p := fakePod{namespace: "team-a", name: "web-1", ip: "10.0.0.5", uid: "pod-uid", labels: map[string]string{"app": "sink"}, phase: corev1.PodRunning}
	for _, mod := range mods {
		mod(&p)
	}
	return p
}

// sinkService is Service sink of team-a, port http (80) of the Pods labelled
// app=sink.
func sinkService(mods ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "sink", UID: "svc-uid"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: map[string]string{"app": "sink"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}}
	for _, mod := range mods {
		mod(s)
	}
	return s
}

// sinkSlice is an EndpointSlice of Service sink, port http at 8080, with
// one endpoint per address, each of Pod web-1.
func sinkSlice(addresses ...string) *discoveryv1.EndpointSlice {
	name, port, tcp := "http", int32(8080), corev1.ProtocolTCP
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "sink-1", Labels: map[string]string{discoveryv1.LabelServiceName: "sink"}},
		AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &tcp}}}
	for _, a := range addresses {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{a},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "team-a", Name: "web-1"}})
	}
	return s
}

// egressCluster is a reader of objs and of pods, whose metadata-only list
// filters by the fields ownPod selects on, as the API server does. Reading
// a resource in fail fails with its error.
func egressCluster(t *testing.T, objs []runtime.Object, pods []fakePod, fail map[string]error) cluster.Reader {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	kube := kubefake.NewClientset(objs...)
	meta := metadatafake.NewSimpleMetadataClient(scheme)
	meta.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		restrictions := a.(k8stesting.ListAction).GetListRestrictions()
		list := &metav1.List{}
		for _, p := range pods {
			if p.namespace != a.GetNamespace() || !restrictions.Fields.Matches(fields.Set{"metadata.name": p.name, "status.podIP": p.ip,
				"status.phase": string(p.phase), "spec.hostNetwork": strconv.FormatBool(p.hostNetwork)}) {
				continue
			}
			m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: p.namespace, Name: p.name, UID: p.uid, Labels: p.labels}}
			if p.deleting {
				m.DeletionTimestamp = &metav1.Time{Time: sweepNow}
			}
			list.Items = append(list.Items, runtime.RawExtension{Object: m})
		}
		return true, list, nil
	})
	for resource, err := range fail {
		react := func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, err }
		kube.PrependReactor("list", resource, react)
		meta.PrependReactor("list", resource, react)
	}
	return cluster.Reader{Clients: cluster.Clients{Kube: kube, Metadata: meta}}
}

// A webhook goes where its manager's trust allows: a trusted manager's and
// a rule's as the platform's, unread; a tenant's to a public URL, or to a
// Service of its own namespace with a selector, dialled at the ready
// endpoints of the Pods of that namespace it selects, not hostNetwork
// ones; anything else refused. A Service not read is no refusal: it backs
// off only when RBAC refused the read (lasting).
func TestRoute(t *testing.T) {
	forbidden := apierrors.NewForbidden(corev1.Resource("services"), "", errors.New("RBAC"))
	good := []runtime.Object{sinkService(), sinkSlice("10.0.0.5")}
	withSlice := func(s *discoveryv1.EndpointSlice) []runtime.Object { return []runtime.Object{sinkService(), s} }
	for _, tt := range []struct {
		name    string
		manager func(*policy.Manager)
		url     string
		objs    []runtime.Object
		pods    []fakePod
		fail    map[string]error
		// want: a route (a tenant's, and the endpoints it dials), or an
		// error that says err; unread: the Service was not read, and
		// whether that lasts.
		// noRead: nothing is read (the reader has no clients).
		noRead    bool
		tenant    bool
		endpoints string
		err       string
		unread    string
	}{
		{name: "a trusted manager's: the platform's, nothing read", noRead: true, manager: func(m *policy.Manager) { m.Namespace = "platform" }, url: "http://sink.team-b.svc/x"},
		{name: "a rule's: the platform's, nothing read", noRead: true, manager: func(m *policy.Manager) { m.Rule = &policy.Rule{} }, url: "http://sink.team-b.svc/x"},
		{name: "a tenant's public URL: nothing read", noRead: true, url: "https://hooks.example.com/x", tenant: true},
		{name: "a tenant's URL that does not parse", noRead: true, url: "http://sink.team-a.svc:x/", err: "refused: the url does not parse"},
		{name: "another namespace's Service", noRead: true, url: "http://sink.team-b.svc/x",
			err: "refused: Service sink is of namespace team-b: a webhook may reach Services of its manager's own namespace (team-a) only"},
		{name: "no Service name", noRead: true, url: "http://team-a.svc/x", err: "refused: team-a.svc is no Service name"},
		{name: "no TCP port", noRead: true, url: "http://sink.team-a.svc:0/x", err: "refused: port 0 is no TCP port"},
		{name: "no such Service", url: "http://sink.team-a.svc/x", err: "refused: there is no Service sink in namespace team-a"},
		{name: "an ExternalName Service", url: "http://sink.team-a.svc/x",
			objs: []runtime.Object{sinkService(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeExternalName })},
			err:  "refused: the Service sink is of type ExternalName"},
		{name: "a Service without a selector", url: "http://sink.team-a.svc/x",
			objs: []runtime.Object{sinkService(func(s *corev1.Service) { s.Spec.Selector = nil }), sinkSlice("10.0.0.5")}, pods: []fakePod{sinkPod()},
			err: "refused: the Service sink has no selector"},
		{name: "a port the Service does not serve", url: "http://sink.team-a.svc:8080/x", objs: good, pods: []fakePod{sinkPod()},
			err: "refused: the Service sink has no TCP port 8080"},
		{name: "a Pod the selector does not pick", url: "http://sink.team-a.svc/x", objs: good,
			pods: []fakePod{sinkPod(func(p *fakePod) { p.labels = map[string]string{"app": "other"} })}, err: "has no ready endpoint of a Pod it selects"},
		{name: "a hostNetwork Pod", url: "http://sink.team-a.svc/x", objs: good,
			pods: []fakePod{sinkPod(func(p *fakePod) { p.hostNetwork = true })}, err: "has no ready endpoint of a Pod it selects"},
		{name: "a Pod not running", url: "http://sink.team-a.svc/x", objs: good,
			pods: []fakePod{sinkPod(func(p *fakePod) { p.phase = corev1.PodPending })}, err: "has no ready endpoint of a Pod it selects"},
		{name: "a Pod being deleted", url: "http://sink.team-a.svc/x", objs: good,
			pods: []fakePod{sinkPod(func(p *fakePod) { p.deleting = true })}, err: "has no ready endpoint of a Pod it selects"},
		{name: "an address not the Pod's", url: "http://sink.team-a.svc/x", objs: withSlice(sinkSlice("10.0.0.9")), pods: []fakePod{sinkPod()},
			err: "has no ready endpoint of a Pod it selects"},
		{name: "a Pod of another namespace", url: "http://sink.team-a.svc/x", pods: []fakePod{sinkPod(), sinkPod(func(p *fakePod) { p.namespace = "team-b" })},
			objs: withSlice(func() *discoveryv1.EndpointSlice {
				s := sinkSlice("10.0.0.5")
				s.Endpoints[0].TargetRef.Namespace = "team-b"
				return s
			}()), err: "has no ready endpoint of a Pod it selects"},
		{name: "a Pod of another UID", url: "http://sink.team-a.svc/x", pods: []fakePod{sinkPod()},
			objs: withSlice(func() *discoveryv1.EndpointSlice {
				s := sinkSlice("10.0.0.5")
				s.Endpoints[0].TargetRef.UID = "old-pod-uid"
				return s
			}()), err: "has no ready endpoint of a Pod it selects"},
		{name: "an endpoint not ready", url: "http://sink.team-a.svc/x", pods: []fakePod{sinkPod()},
			objs: withSlice(func() *discoveryv1.EndpointSlice {
				s := sinkSlice("10.0.0.5")
				s.Endpoints[0].Conditions.Ready = new(false)
				return s
			}()), err: "has no ready endpoint of a Pod it selects"},
		{name: "an endpoint of no Pod", url: "http://sink.team-a.svc/x", pods: []fakePod{sinkPod()},
			objs: withSlice(func() *discoveryv1.EndpointSlice {
				s := sinkSlice("10.0.0.5")
				s.Endpoints[0].TargetRef.Kind = "Node"
				return s
			}()), err: "has no ready endpoint of a Pod it selects"},
		{name: "an EndpointSlice of another port", url: "http://sink.team-a.svc/x", pods: []fakePod{sinkPod()},
			objs: withSlice(func() *discoveryv1.EndpointSlice {
				s := sinkSlice("10.0.0.5")
				*s.Ports[0].Name = "metrics"
				return s
			}()), err: "has no ready endpoint of a Pod it selects"},
		{name: "an FQDN EndpointSlice", url: "http://sink.team-a.svc/x", pods: []fakePod{sinkPod()},
			objs: withSlice(func() *discoveryv1.EndpointSlice {
				s := sinkSlice("10.0.0.5")
				s.AddressType = discoveryv1.AddressTypeFQDN
				return s
			}()), err: "has no ready endpoint of a Pod it selects"},
		{name: "the Service's own Pod", url: "http://sink.team-a.svc/x", objs: good, pods: []fakePod{sinkPod()},
			tenant: true, endpoints: "[10.0.0.5:8080]"},
		{name: "its own Pod by its full name", url: "http://SINK.team-a.svc.cluster.local./x", objs: good, pods: []fakePod{sinkPod()},
			tenant: true, endpoints: "[10.0.0.5:8080]"},
		{name: "as many endpoints as an attempt dials, of those checked", url: "http://sink.team-a.svc/x",
			objs:   withSlice(sinkSlice("10.0.0.9", "10.0.0.5", "10.0.0.5", "10.0.0.6", "10.0.0.7")),
			pods:   []fakePod{sinkPod(), sinkPod(func(p *fakePod) { p.ip = "10.0.0.6" }), sinkPod(func(p *fakePod) { p.ip = "10.0.0.7" })},
			tenant: true, endpoints: "[10.0.0.5:8080 10.0.0.6:8080]"},
		{name: "the Service's read refused by RBAC: lasting", url: "http://sink.team-a.svc/x", objs: good, fail: map[string]error{"services": forbidden},
			err: "failed: the Service sink could not be read", unread: "lasting"},
		{name: "the Service's read failed", url: "http://sink.team-a.svc/x", objs: good, fail: map[string]error{"services": apierrors.NewInternalError(errors.New("etcd"))},
			err: "failed: the Service sink could not be read", unread: "passing"},
		{name: "the EndpointSlices' read failed", url: "http://sink.team-a.svc/x", objs: good, fail: map[string]error{"endpointslices": apierrors.NewInternalError(errors.New("etcd"))},
			err: "failed: the Service sink could not be read", unread: "passing"},
		{name: "the Pods' read failed", url: "http://sink.team-a.svc/x", objs: good, fail: map[string]error{"pods": apierrors.NewInternalError(errors.New("etcd"))},
			err: "failed: the Service sink could not be read", unread: "passing"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := policy.Manager{Namespace: "team-a", Name: "m"}
			if tt.manager != nil {
				tt.manager(&m)
			}
			x := newExecutor(t, newFakeWriter(), cluster.Reader{})
			x.Trusted = []string{"platform"}
			if !tt.noRead {
				x.Reads = egressCluster(t, tt.objs, tt.pods, tt.fail)
			}
			route, err := x.route(t.Context(), m, tt.url)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("route %+v, error %v; want an error that says %q", route, err, tt.err)
				}
				var u *unreadService
				unread := ""
				if errors.As(err, &u) {
					unread = map[bool]string{false: "passing", true: "lasting"}[u.lasting]
				}
				if unread != tt.unread {
					t.Errorf("unread %q, want %q", unread, tt.unread)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			scope := ""
			if tt.tenant {
				scope = "team-a"
			}
			endpoints := ""
			if route.Endpoints != nil {
				endpoints = fmt.Sprint(route.Endpoints)
			}
			if route.Tenant != tt.tenant || route.Scope != scope || endpoints != tt.endpoints || (route.Recheck != nil) != (tt.endpoints != "") {
				t.Errorf("route %+v; want a tenant's %t, in scope %q, dialling %s, rechecked", route, tt.tenant, scope, tt.endpoints)
			}
		})
	}
}

// Before every retry, a tenant's Service is read again: one replaced or
// gone since the first attempt is refused.
func TestRouteRecheck(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(t *testing.T, x *Executor)
		want   string
	}{
		{"unchanged", func(*testing.T, *Executor) {}, "[10.0.0.5:8080]"},
		{"replaced", func(t *testing.T, x *Executor) {
			services := x.Reads.Clients.Kube.CoreV1().Services("team-a")
			if err := services.Delete(t.Context(), "sink", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := services.Create(t.Context(), sinkService(func(s *corev1.Service) { s.UID = "new-uid" }), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}, "refused: the Service sink was replaced since the first attempt"},
		{"gone", func(t *testing.T, x *Executor) {
			if err := x.Reads.Clients.Kube.CoreV1().Services("team-a").Delete(t.Context(), "sink", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}, "refused: the Service sink was replaced since the first attempt"},
		{"its port removed", func(t *testing.T, x *Executor) {
			services := x.Reads.Clients.Kube.CoreV1().Services("team-a")
			if _, err := services.Update(t.Context(), sinkService(func(s *corev1.Service) { s.Spec.Ports[0].Port = 81 }), metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}, "refused: since the first attempt, the Service sink has no TCP port 80"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			x := newExecutor(t, newFakeWriter(), egressCluster(t, []runtime.Object{sinkService(), sinkSlice("10.0.0.5")}, []fakePod{sinkPod()}, nil))
			route, err := x.route(t.Context(), policy.Manager{Namespace: "team-a", Name: "m"}, "http://sink.team-a.svc/x")
			if err != nil || route.Recheck == nil {
				t.Fatalf("route %+v, error %v; want one rechecked", route, err)
			}
			tt.change(t, x)
			eps, err := route.Recheck(t.Context())
			got := fmt.Sprint(eps)
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("recheck %s, want %s", got, tt.want)
			}
		})
	}
}
