package policy

// Workload kinds a SCALE_DOWN or SLEEP selector names in any letter case, each
// written to in its own way (scaled, suspended, paused): the names the parser
// knows, each kind's home being in internal/workload, whose registry lists them
// in this order (docs/design.md, "Adding a workload kind"). A selector may also
// name any other kind with a scale subresource, as Kind or Kind.group, which
// the cluster's discovery resolves when the action runs.
const (
	KindDeployment   = "Deployment"
	KindStatefulSet  = "StatefulSet"
	KindCronJob      = "CronJob"
	KindScaledObject = "ScaledObject"
)

// KnownKinds are the kinds a selector names without discovery.
var KnownKinds = []string{KindDeployment, KindStatefulSet, KindCronJob, KindScaledObject}
