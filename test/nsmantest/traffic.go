package nsmantest

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// The request counters that a traffic preset of IDLE queries, named and
// labelled as the projects that export them do.
const (
	// NginxRequests is ingress-nginx's counter of client requests
	// (internal/ingress/metric/collectors/socket.go): labelled with the
	// Ingress's namespace as `namespace`, which a scrape that gives its
	// target a `namespace` label of its own (the controller pod's) renames
	// `exported_namespace` unless honor_labels is set.
	NginxRequests = "nginx_ingress_controller_requests"
	// IstioRequests is Istio's standard request counter, reported by the
	// sidecars: the namespace served is `destination_service_namespace`.
	IstioRequests = "istio_requests_total"
	// TraefikRequests is Traefik's request counter by service: its only
	// mention of the namespace is in `service`, "<namespace>-<service>-
	// <port>@kubernetes" for an Ingress's backend ("@kubernetescrd" for an
	// IngressRoute's).
	TraefikRequests = "traefik_service_requests_total"
)

// The ingress-nginx controller the exporter stands for: these are its
// constant labels.
const (
	nginxControllerNamespace = "ingress-nginx"
	nginxControllerClass     = "k8s.io/ingress-nginx"
	nginxControllerPod       = "ingress-nginx-controller-7d9f8c6b5-x2x9q"
)

// Traffic is an exporter that serves the request counters of
// ingress-nginx, Istio and Traefik at /metrics, as those projects name and
// label them, for a test's Prometheus to scrape. A test adds requests for
// a namespace; a series appears with the first request counted in it, as
// it does in the real exporters.
type Traffic struct {
	Addr string // host:port, the scrape target
	URL  string // http://host:port

	nginx   *prometheus.CounterVec
	istio   *prometheus.CounterVec
	traefik *prometheus.CounterVec
}

// nginxLabels are ingress-nginx's request labels, in its order.
var nginxLabels = []string{"status", "method", "path", "namespace", "ingress", "service", "canary"}

// istioLabels are the labels of Istio's standard metrics.
var istioLabels = []string{
	"reporter",
	"source_workload", "source_workload_namespace", "source_principal", "source_app", "source_version",
	"source_canonical_service", "source_canonical_revision", "source_cluster",
	"destination_workload", "destination_workload_namespace", "destination_principal", "destination_app",
	"destination_version", "destination_service", "destination_service_name", "destination_service_namespace",
	"destination_canonical_service", "destination_canonical_revision", "destination_cluster",
	"request_protocol", "response_code", "grpc_response_status", "response_flags", "connection_security_policy",
}

// traefikLabels are the labels of Traefik's service metrics.
var traefikLabels = []string{"code", "method", "protocol", "service"}

// StartTraffic starts the exporter on a loopback port; it is closed when t
// ends.
func StartTraffic(t testing.TB) *Traffic {
	t.Helper()
	tr, handler := NewTraffic()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	tr.URL = srv.URL
	tr.Addr = strings.TrimPrefix(srv.URL, "http://")
	return tr
}

// NewTraffic returns an exporter with no requests counted yet, and the
// handler that serves its /metrics, for a program to serve where it
// will (Addr and URL are then its to set).
func NewTraffic() (*Traffic, http.Handler) {
	tr := &Traffic{
		nginx: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NginxRequests,
			Help: "The total number of client requests",
			ConstLabels: prometheus.Labels{
				"controller_namespace": nginxControllerNamespace,
				"controller_class":     nginxControllerClass,
				"controller_pod":       nginxControllerPod,
			},
		}, nginxLabels),
		istio: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: IstioRequests,
			Help: "Total requests.",
		}, istioLabels),
		traefik: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: TraefikRequests,
			Help: "How many HTTP requests processed on a service, partitioned by status code, protocol, and method.",
		}, traefikLabels),
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(tr.nginx, tr.istio, tr.traefik)
	return tr, exposition(reg)
}

// Requests counts n requests to the Service web, port 80, of namespace
// in all three counters: through an Ingress web of ingress-nginx, Istio's
// sidecar and Traefik.
func (tr *Traffic) Requests(namespace string, n int) {
	tr.NginxRequests(namespace, "web", "web", n)
	tr.IstioRequests(namespace, "web", n)
	tr.TraefikRequests(namespace, "web", 80, n)
}

// NginxRequests counts n requests, 200 GET /, that ingress-nginx passed
// through the Ingress ingress of namespace to its Service service.
func (tr *Traffic) NginxRequests(namespace, ingress, service string, n int) {
	tr.nginx.WithLabelValues("200", "GET", "/", namespace, ingress, service, "").Add(float64(n))
}

// IstioRequests counts n requests, 200 over HTTP from the ingress gateway,
// to the Service service of namespace, as its sidecar reports them
// (reporter="destination").
func (tr *Traffic) IstioRequests(namespace, service string, n int) {
	tr.istio.With(prometheus.Labels{
		"reporter":                       "destination",
		"source_workload":                "istio-ingressgateway",
		"source_workload_namespace":      "istio-system",
		"source_principal":               "spiffe://cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account",
		"source_app":                     "istio-ingressgateway",
		"source_version":                 "unknown",
		"source_canonical_service":       "istio-ingressgateway",
		"source_canonical_revision":      "latest",
		"source_cluster":                 "Kubernetes",
		"destination_workload":           service,
		"destination_workload_namespace": namespace,
		"destination_principal":          "spiffe://cluster.local/ns/" + namespace + "/sa/default",
		"destination_app":                service,
		"destination_version":            "v1",
		"destination_service":            service + "." + namespace + ".svc.cluster.local",
		"destination_service_name":       service,
		"destination_service_namespace":  namespace,
		"destination_canonical_service":  service,
		"destination_canonical_revision": "v1",
		"destination_cluster":            "Kubernetes",
		"request_protocol":               "http",
		"response_code":                  "200",
		"grpc_response_status":           "",
		"response_flags":                 "-",
		"connection_security_policy":     "mutual_tls",
	}).Add(float64(n))
}

// TraefikRequests counts n requests, 200 GET over HTTP, that Traefik's
// Kubernetes Ingress provider passed to port of the Service service of
// namespace.
func (tr *Traffic) TraefikRequests(namespace, service string, port, n int) {
	name := namespace + "-" + service + "-" + strconv.Itoa(port) + "@kubernetes"
	tr.traefik.WithLabelValues("200", "GET", "http", name).Add(float64(n))
}

// exposition serves what reg gathers in the text format. It is not
// promhttp's handler, which would bring the modules of its compression into
// go.sum for this alone; Prometheus asks for the text format too.
func exposition(reg *prometheus.Registry) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fams, err := reg.Gather()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		format := expfmt.NewFormat(expfmt.TypeTextPlain)
		w.Header().Set("Content-Type", string(format))
		enc := expfmt.NewEncoder(w, format)
		for _, f := range fams {
			if err := enc.Encode(f); err != nil {
				return // the scrape fails; the test's wait says so
			}
		}
	})
}
