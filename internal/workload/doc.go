// Package workload is each kind of workload nsman puts to sleep, one home
// per way it sleeps (kube-green's model): replicas.go (Deployments,
// StatefulSets and any kind with a scale subresource), cronjob.go
// (CronJobs suspended), scaledobject.go (KEDA ScaledObjects paused at
// zero). A home says what of a workload is its state (Spec), what puts it
// to sleep and what wakes it (the merge patches, each with the record
// annotation it writes or reads), what says it is awake and who woke it,
// and which permission it needs; registry.go registers the kinds once.
// It makes no request: probe lists and reads through a Way, execute
// patches what a Way returns, cluster.Permissions grants what the
// registry needs.
package workload
