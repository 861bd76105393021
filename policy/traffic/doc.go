// Package traffic is where an IDLE condition may read a namespace's
// requests: the presets nsman knows, one home each (the counter its
// exporter serves, the PromQL nsman runs over it, how a series of the
// answer names its namespace), and the query of a platform's own. It makes
// no request: package probe runs the queries, once per query and window
// per sweep.
package traffic
