package execute

import (
	"net/url"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nsman/nsman/policy"
)

func TestServiceName(t *testing.T) {
	for _, tt := range []struct {
		host, name, namespace string
		isService             bool
	}{
		{"sink.team-a.svc", "sink", "team-a", true},
		{"sink.team-a.svc.cluster.local", "sink", "team-a", true},
		{"team-a.svc", "", "", true},
		{"a.sink.team-a.svc", "", "", true},
		{".team-a.svc", "", "", true},
		{"svc", "", "", false},
		{"hooks.example.com", "", "", false},
		{"sink.team-a.svc.example.com", "", "", false},
		{"10.0.0.1", "", "", false},
	} {
		name, namespace, isService := serviceName(tt.host)
		if name != tt.name || namespace != tt.namespace || isService != tt.isService {
			t.Errorf("serviceName(%q) = %q, %q, %t; want %q, %q, %t", tt.host, name, namespace, isService, tt.name, tt.namespace, tt.isService)
		}
	}
}

func TestURLPort(t *testing.T) {
	for raw, want := range map[string]string{
		"http://sink.a.svc/x":       "80",
		"https://sink.a.svc/x":      "443",
		"http://sink.a.svc:8080/x":  "8080",
		"http://sink.a.svc:0/x":     "port 0 is no TCP port",
		"http://sink.a.svc:70000/x": "port 70000 is no TCP port",
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		port, err := urlPort(u)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			got = strconv.Itoa(int(port))
		}
		if got != want {
			t.Errorf("urlPort(%s) = %q, want %q", raw, got, want)
		}
	}
}

func TestServicePort(t *testing.T) {
	svc := func(typ corev1.ServiceType, ports ...corev1.ServicePort) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "sink"}, Spec: corev1.ServiceSpec{Type: typ, ClusterIP: "10.96.0.7", Ports: ports, Selector: map[string]string{"app": "sink"}}}
	}
	http := corev1.ServicePort{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}
	handmade := svc(corev1.ServiceTypeClusterIP, http)
	handmade.Spec.Selector = nil
	headless := svc(corev1.ServiceTypeClusterIP, http)
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	for _, tt := range []struct {
		name string
		svc  *corev1.Service
		want string
	}{
		{"ClusterIP", svc(corev1.ServiceTypeClusterIP, corev1.ServicePort{Name: "metrics", Port: 9090}, http), "http"},
		{"LoadBalancer", svc(corev1.ServiceTypeLoadBalancer, http), "http"},
		{"headless, with a selector", headless, "http"},
		{"ExternalName", svc(corev1.ServiceTypeExternalName, http), "the Service sink is of type ExternalName: nsman dials a Service's own Pods only"},
		{"no selector (endpoints written by hand)", handmade, "the Service sink has no selector: nsman dials only the Pods a Service's selector picks"},
		{"another port", svc(corev1.ServiceTypeClusterIP, corev1.ServicePort{Port: 8080}), "the Service sink has no TCP port 80"},
		{"UDP only", svc(corev1.ServiceTypeClusterIP, corev1.ServicePort{Port: 80, Protocol: corev1.ProtocolUDP}), "the Service sink has no TCP port 80"},
	} {
		sp, err := servicePort(tt.svc, 80)
		got := sp.Name
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestSlicePort(t *testing.T) {
	named := func(name string, port int32, protocol corev1.Protocol) discoveryv1.EndpointPort {
		return discoveryv1.EndpointPort{Name: &name, Port: &port, Protocol: &protocol}
	}
	unnamed := discoveryv1.EndpointPort{Port: new(int32(8080))}
	for _, tt := range []struct {
		name  string
		ports []discoveryv1.EndpointPort
		want  int
	}{
		{"http", []discoveryv1.EndpointPort{named("metrics", 9090, corev1.ProtocolTCP), named("http", 8080, corev1.ProtocolTCP)}, 8080},
		{"http", []discoveryv1.EndpointPort{named("http", 8080, corev1.ProtocolUDP)}, -1},
		{"http", []discoveryv1.EndpointPort{named("http", 0, corev1.ProtocolTCP)}, -1},
		{"http", []discoveryv1.EndpointPort{unnamed}, -1},
		{"", []discoveryv1.EndpointPort{unnamed}, 8080},
		{"", []discoveryv1.EndpointPort{named("http", 8080, corev1.ProtocolTCP)}, -1},
	} {
		port, ok := slicePort(tt.ports, tt.name)
		got := int(port)
		if !ok {
			got = -1
		}
		if got != tt.want {
			t.Errorf("slicePort(%q) = %d, want %d", tt.name, got, tt.want)
		}
	}
}

// A tenant's URL whose host is not in ASCII form is refused before it is
// judged (nothing is read: the Executor here has no clients), as the
// webhook's transport would dial and pool it as another name.
func TestRouteRefusesAHostNotInASCIIForm(t *testing.T) {
	x := &Executor{}
	m := policy.Manager{Namespace: "team-b", Name: "m"}
	for _, raw := range []string{"http://hook.team-a.ｓｖｃ/x", "http://ｓink.team-b.svc/x", "http://sink.team-b.%EF%BD%93vc/x"} {
		_, err := x.route(t.Context(), m, raw)
		if r, ok := err.(*refusal); !ok || !strings.Contains(r.reason, "is not in ASCII form") {
			t.Errorf("%s: %v, want refused as not in ASCII form", raw, err)
		}
	}
}
