// Package nsmantest drives nsman on a control plane from package cluster:
// it installs a CRD and nsman's RBAC, applies manifests, runs nsman sweep in
// process as nsman's ServiceAccount and decodes its JSON report, and
// receives webhooks on loopback. It also runs the pinned Prometheus tools
// that the metrics and traffic tests need (the Pushgateway, promtool, a
// Prometheus server) and an exporter of ingress controllers' and meshes'
// request counters for that Prometheus to scrape.
package nsmantest
