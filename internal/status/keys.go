package status

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/nsman/nsman/policy"
	"k8s.io/apimachinery/pkg/types"
)

// PairIdempotencyKey identifies one firing of one policy of one rule
// generation on one namespace (uid): a namespace recreated under the same
// name gets a new one.
func PairIdempotencyKey(m policy.Manager, policyName string, namespaceUID types.UID) string {
	return Digest("%s/%d/%s/%s", m.UID, m.Generation, policyName, namespaceUID)
}

// PairAnnotationPrefix begins the annotation on a namespace that holds a
// rule's record of it (PairStatus, as JSON), written only when there is
// something to keep: PairAnnotation.
const PairAnnotationPrefix = "nsman.k8s.consol.de/rule-"

// PairAnnotation is the annotation that holds the records of the rule of
// UID uid: PairAnnotationPrefix and a digest of the UID. Whoever reads the
// namespace learns the key, not the rule's UID; a rule recreated under the
// same name (another UID) starts afresh.
func PairAnnotation(uid types.UID) string {
	return PairAnnotationPrefix + Digest("record/%s", uid)
}

// LegacyPairAnnotation is where earlier versions kept the rule's record:
// PairAnnotationPrefix and the rule's UID itself. A record found there
// alone is read as the rule's, and moved to PairAnnotation by the next
// write of it, so that a rule never acts twice for a record it wrote
// before.
func LegacyPairAnnotation(uid types.UID) string {
	return PairAnnotationPrefix + string(uid)
}

// PairAnnotations are the annotations that hold records of the rules of
// uids, at either key: the others are records of rules that are gone.
func PairAnnotations(uids map[types.UID]bool) map[string]bool {
	keys := make(map[string]bool, 2*len(uids))
	for uid := range uids {
		keys[PairAnnotation(uid)], keys[LegacyPairAnnotation(uid)] = true, true
	}
	return keys
}

// StatusAnnotation holds a manager's Status, as JSON, under the original CRD,
// which has no status subresource. Under nsman's CRD the same record is the
// status.
const StatusAnnotation = "nsman.k8s.consol.de/status"

// IdempotencyKey identifies one firing of one policy of one manager
// generation, derived, not stored: a sweep completing a claim sends it too.
func IdempotencyKey(m policy.Manager, policyName string) string {
	return Digest("%s/%d/%s", m.UID, m.Generation, policyName)
}

// Digest is 16 bytes of the SHA-256 of the formatted string, in hex.
func Digest(format string, a ...any) string {
	sum := sha256.Sum256(fmt.Appendf(nil, format, a...))
	return hex.EncodeToString(sum[:16])
}

// AnnotationPrefix prefixes the annotations of a manager that nsman
// reads: its hold, its wake, and its status under the original CRD.
const AnnotationPrefix = "nsman.k8s.consol.de/"

// HoldAnnotation, set to an RFC 3339 time on a namespace, holds every
// manager and rule acting on that namespace until then; on a manager, it
// holds that manager (a rule: all its namespaces). nsman hold writes it.
const HoldAnnotation = "nsman.k8s.consol.de/hold-until"

// NotifyChannelAnnotation, on a namespace or on its manager (a rule: the
// default of all its namespaces), names the platform's notification
// channel (--notify-channel) that the notifications about it go to: a
// name, never a URL, which only the platform gives. policy.Parse reads a
// manager's into policy.Manager.NotifyChannel.
const NotifyChannelAnnotation = "nsman.k8s.consol.de/notify-channel"

// WakeAnnotation, set to an RFC 3339 time on a namespace, wakes it until
// then from the sleep of every SLEEP policy acting on it, and the sweep
// after that time puts it to sleep again if its policy still holds; on a
// manager, it wakes that manager's target (a rule: all its namespaces).
// nsman wake writes it. One ending further ahead than a sweep's --max-hold
// is ignored, as such a hold is: waking for long is a deliberate act too.
const WakeAnnotation = policy.WakeAnnotation

// ReplicasAnnotation records on a workload the replicas it had before nsman
// scaled it down; nsman restore puts them back.
const ReplicasAnnotation = "nsman.k8s.consol.de/replicas-before-scale-down"

// ReplicasAsleepAnnotation records on a workload beside ReplicasAnnotation
// the replicas a SCALE_DOWN or SLEEP with params.replicas above zero left
// it at: at or below it, it is still asleep, and a wake or nsman restore
// puts the recorded count back; above it, someone woke it. Absent, as
// every record written before params.replicas has it, it is 0.
const ReplicasAsleepAnnotation = "nsman.k8s.consol.de/replicas-asleep"

// LoadBalancerAnnotation records on a Service that a SCALE_DOWN or SLEEP
// with params.loadBalancers parked as ClusterIP what it needs back to be a
// LoadBalancer again, as JSON: its type and the fields the change to
// ClusterIP cleared. A wake or nsman restore brings them back.
const LoadBalancerAnnotation = "nsman.k8s.consol.de/load-balancer-before-sleep"

// PatchedAnnotation records on an object that a sleep's patch
// (params.patches) changed it: the patch and its inverse, as JSON, which
// the wake or nsman restore applies while the object is still as the
// patch made it.
const PatchedAnnotation = "nsman.k8s.consol.de/patched-before-sleep"

// SuspendAnnotation, "false", records on a CronJob that nsman suspended it
// and that it ran before; nsman restore resumes it.
const SuspendAnnotation = "nsman.k8s.consol.de/suspend-before-scale-down"

// PausedReplicasAnnotation records on a KEDA ScaledObject the value its
// autoscaling.keda.sh/paused-replicas had before nsman paused it at zero,
// "" for none; nsman restore brings it back, or removes the pause.
const PausedReplicasAnnotation = "nsman.k8s.consol.de/paused-replicas-before-scale-down"

// KedaPausedReplicas is KEDA's annotation that holds a ScaledObject's
// target at that many replicas, whatever its triggers say: nsman pauses a
// ScaledObject at "0".
const KedaPausedReplicas = "autoscaling.keda.sh/paused-replicas"

// FluxReconcileAnnotation, "disabled" on an object Flux's kustomize-controller
// applies (it carries FluxNameLabel), keeps Flux from reverting it: nsman
// sets it on the workloads it puts to sleep, and ReconcileAnnotation
// records the value it had ("" for none), which the wake brings back.
const (
	FluxReconcileAnnotation = "kustomize.toolkit.fluxcd.io/reconcile"
	FluxNameLabel           = "kustomize.toolkit.fluxcd.io/name"
	ReconcileAnnotation     = "nsman.k8s.consol.de/reconcile-before-sleep"
)

// KeepAwakeLabel, "true" on a workload, keeps nsman from scaling, suspending
// or pausing it.
const KeepAwakeLabel = "nsman.k8s.consol.de/keep-awake"
