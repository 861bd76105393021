// Package probe is what a sweep reads of namespaces to decide on them, each
// read bounded in objects, bytes and time: the pods checks of
// PODS_SUCCEED and PODS_FAILED (pods, then Jobs), the last activity of
// IDLE, what a DELETE reclaims, and why a namespace is stuck in
// Terminating. Each is read namespace by namespace first, then, past a
// number of namespaces in one sweep, from one cluster-wide paged list,
// listed once by the probe that owns it; a sweep makes one of each.
package probe
