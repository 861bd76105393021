package traffic

import "fmt"

// istio reads Istio's istio_requests_total as the sidecar of the workload
// served reports it (reporter="destination"), by the `namespace` its
// scrape gives it: the sidecar's pod's. Istio's own labels
// (destination_service_namespace) are the sidecar's to say; the scrape's
// are not, so a pod can make no namespace but its own look used.
var istio = Preset{
	Name:   "istio",
	Metric: "istio_requests_total",
	Filter: `reporter="destination"`,
	By:     "namespace",
	query: func(sel, window string) string {
		return fmt.Sprintf("sum by (namespace) (%s)", requests(sel, window))
	},
}
