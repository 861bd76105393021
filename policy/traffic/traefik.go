package traffic

import (
	"fmt"
	"strings"
)

// traefik reads Traefik's traefik_service_requests_total, whose only word
// of the namespace is the start of `service`: "<namespace>-<service>-
// <port>@kubernetes" for an Ingress's backend, "@kubernetescrd" for an
// IngressRoute's. Only series scraped from Traefik's namespace count.
var traefik = Preset{
	Name:   "traefik",
	Metric: "traefik_service_requests_total",
	Match:  `namespace="traefik"`,
	Filter: `service=~".+@kubernetes(crd)?"`,
	By:     "service",
	query: func(sel, window string) string {
		return fmt.Sprintf("sum by (service) (%s)", requests(sel, window))
	},
	namespaces: traefikNamespaces,
}

// traefikNamespaces are the namespaces that exist whose name, and a dash,
// begins service: a name with dashes cannot say where the namespace ends
// (team's Service a-web and team-a's Service web are both
// team-a-web-80@kubernetes), and the requests count for each that may be
// theirs, so that none is put to sleep while used.
func traefikNamespaces(service string, exists func(string) bool) []string {
	at := strings.LastIndex(service, "@kubernetes")
	if at < 0 {
		return nil
	}
	name := service[:at]
	var out []string
	for i := strings.IndexByte(name, '-'); i > 0; i = next(name, i) {
		if exists(name[:i]) {
			out = append(out, name[:i])
		}
	}
	return out
}

// next is the index of the dash after the one at i, -1 for none.
func next(s string, i int) int {
	j := strings.IndexByte(s[i+1:], '-')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}
