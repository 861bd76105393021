package traffic

import "fmt"

// ingressNginx reads ingress-nginx's nginx_ingress_controller_requests,
// which labels a request with the Ingress's namespace as `namespace`. A
// scrape that gives its target a `namespace` of its own (the controller
// pod's, as ServiceMonitors and the usual kubernetes_sd_configs relabelling
// do) renames that label `exported_namespace`, unless honor_labels is set:
// label_replace takes exported_namespace where there is one. Only series
// scraped from the controller's namespace count.
var ingressNginx = Preset{
	Name:   "ingress-nginx",
	Metric: "nginx_ingress_controller_requests",
	Match:  `namespace="ingress-nginx"`,
	By:     "namespace",
	query: func(sel, window string) string {
		return fmt.Sprintf(`sum by (namespace) (label_replace(%s, "namespace", "$1", "exported_namespace", "(.+)"))`, requests(sel, window))
	},
}
