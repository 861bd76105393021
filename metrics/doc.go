// Package metrics pushes a sweep's report to a Prometheus Pushgateway: the
// sweep's gauges, and the nsman_reclaimed_* counters, whose totals it reads
// back from the Pushgateway and adds to. It reads the report and nothing
// of the cluster.
package metrics
