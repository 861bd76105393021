package policy

import (
	"path"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/policy/patch"
	"github.com/nsman/nsman/policy/traffic"
	"github.com/nsman/nsman/policy/window"
)

// The resource nsman manages, as the original operator defined it.
const (
	Group    = "k8s.consol.de"
	Version  = "v1beta1"
	Kind     = "NamespaceManager"
	Resource = "namespacemanagers"
)

// Condition and action types, spelled as in the original manifests.
const (
	ConditionTTL         = "TTL"
	ConditionPodsSucceed = "PODS_SUCCEED"
	// ConditionPodsFailed is nsman's own: it needs nsman's CRD.
	ConditionPodsFailed = "PODS_FAILED"
	// ConditionExpires and ConditionIdle are nsman's own: they need nsman's
	// CRD.
	ConditionExpires = "EXPIRES"
	ConditionIdle    = "IDLE"
	ActionDelete     = "DELETE"
	ActionScaleDown  = "SCALE_DOWN"
	ActionWebhook    = "WEBHOOK"
	// ActionSleep is nsman's own: it needs nsman's CRD. Unlike the others
	// it does not fire once: while its policy holds the target is asleep,
	// and once no SLEEP policy of the manager holds it wakes.
	ActionSleep = "SLEEP"
)

// Defaults of the original operator, and nsman's minChecks.
const (
	DefaultTTL          = 1800 * time.Second
	DefaultInitialDelay = 60 * time.Second
	DefaultPeriod       = 10 * time.Second
	DefaultMinChecks    = 1
)

// MaxSeconds bounds every duration field, so that any accepted value is a
// valid time.Duration and fits the CRD's int32-sized schema.
const MaxSeconds = 1<<31 - 1

// Manager is a parsed NamespaceManager.
type Manager struct {
	// Namespace and Name are the manager's own metadata, NotifyChannel its nsman.k8s.consol.de/notify-channel.
	Namespace, Name, NotifyChannel string
	// UID and Generation identify one version of the manager's spec; a webhook
	// idempotency key is derived from them.
	UID        types.UID
	Generation int64
	// Deactivated managers are left alone: the flag is flipped after the
	// manager's action succeeded, or set by a user to keep it dormant.
	Deactivated bool
	// TargetNamespace is spec.namespace, empty when the manager names none.
	TargetNamespace string
	// Arming identifies the spec apart from spec.deactivated: a rule's
	// namespaces are re-armed by an edit of the spec, not by pausing and
	// resuming the rule (each of which is a new generation).
	Arming string
	// Rule is set when the manager is a rule: it has a namespaceSelector or
	// namePatterns instead of spec.namespace, and acts on every namespace
	// they match.
	Rule *Rule
	// Policies in the order they are evaluated; the first that holds fires.
	// SLEEP policies are judged together instead (see Evaluate).
	Policies []Policy
}

// Target is the namespace the manager acts on: spec.namespace, else the
// manager's own name (not its namespace), as in the original operator. A
// rule has no single target: its Target is empty.
func (m Manager) Target() string {
	if m.Rule != nil {
		return ""
	}
	if m.TargetNamespace != "" {
		return m.TargetNamespace
	}
	return m.Name
}

// Policy pairs a condition with the action to take when it holds.
type Policy struct {
	Name      string
	Condition Condition
	Action    Action
	// Raw is the policy exactly as stored, which the webhook body carries.
	Raw map[string]any
	// Final is policies[].final (default true): a final policy firing ends
	// the manager (deactivates it; for a rule, ends the pair); one that is
	// not fires once per generation and leaves the manager standing, and
	// later sweeps go on to the policies after it. A SLEEP policy is never
	// final: it acts at each transition between asleep and awake.
	Final bool
	// Windows, when set, are the only times the policy may act: holding
	// outside them, it waits for the next to open. A SLEEP policy holds
	// only inside them: its windows are when the target sleeps.
	Windows []window.Window
	// WarnBefore, longest first, is how long before its due time a waiting
	// policy tells its subject, once per threshold and due time (warn.Next);
	// a condition reading pods or an owner has no due time, and none.
	WarnBefore []time.Duration
}

// Condition says when a policy holds.
type Condition struct {
	// Type is one of the registered condition types (ConditionTypes),
	// each of which reads the fields below that its comment names.
	Type string
	// TTL: the policy holds once the target is this old.
	TTL time.Duration
	// PODS_SUCCEED: no check before the target is InitialDelay old; counted
	// checks are at least Period apart; the policy holds once MinChecks
	// consecutive checks found no pod matching PodLabels in another phase
	// than Succeeded. No matching pod at all counts as success.
	InitialDelay time.Duration
	Period       time.Duration
	MinChecks    int
	// PodLabels selects the pods to check; empty selects every pod.
	//
	// PODS_FAILED: no check before the target is InitialDelay old; then
	// the policy holds once a pod matching PodLabels is in phase Failed, or
	// a Job whose pod template matches has failed.
	PodLabels map[string]string
	// EXPIRES: the policy holds once At has passed; when At is zero, once
	// the time the target's ExpiresAnnotation says has (never, without
	// one, or with one that does not parse).
	At time.Time
	// IDLE: the policy holds once nothing has happened in the target for
	// Idle: its creation, its TouchedAnnotation, and the creation of its
	// pods, ReplicaSets, ControllerRevisions and Jobs (Input.Activity).
	Idle time.Duration
	// Traffic, for IDLE, is where the target's requests are read, nil for
	// nowhere: requests within Idle are activity now (Input.Traffic).
	Traffic *traffic.Source
	// OWNER_GONE: the policy holds once the target's owner (Input.Owner) has
	// been gone for Grace, counted from the first sweep that found it gone.
	Grace time.Duration
}

// WakeAnnotation, an RFC 3339 time on a target namespace or on its
// manager, wakes the target until then: no SLEEP policy holds meanwhile
// (see Input.WokenUntil). nsman wake writes it.
const WakeAnnotation = "nsman.k8s.consol.de/wake-until"

// TouchedAnnotation on a namespace is a time (RFC 3339) something happened
// in it that an IDLE condition counts as activity: CI writes it at each
// deploy, nsman touch writes it.
const TouchedAnnotation = "nsman.k8s.consol.de/touched"

// ExpiresAnnotation on a namespace is when an EXPIRES condition without
// params.at holds: an RFC 3339 time, or a date YYYY-MM-DD, meaning the end
// of that day in UTC.
const ExpiresAnnotation = "nsman.k8s.consol.de/expires"

// Action is what a policy does when it holds.
type Action struct {
	// Type is ActionDelete, ActionScaleDown, ActionWebhook or ActionSleep.
	Type string
	// Selectors pick the workloads SCALE_DOWN or SLEEP puts to sleep; none
	// means, for SCALE_DOWN, every Deployment and StatefulSet in the
	// target, for SLEEP every workload of a kind nsman puts to sleep.
	Selectors []Selector
	// URL is where WEBHOOK posts.
	URL string
	// Via is what a DELETE deletes through: ViaOwner, or "" for the
	// namespace itself.
	Via string
	// SleepTo is what SCALE_DOWN or SLEEP leaves the workloads at; zero
	// for the other actions.
	SleepTo SleepTo
}

// SleepTo is what SCALE_DOWN or SLEEP leaves the workloads it puts to
// sleep at, as its parameters say; the zero SleepTo leaves no replica (and
// no Service parked). Each workload's way reads what applies to its kind
// and ignores the rest.
type SleepTo struct {
	// Replicas is params.replicas: the replicas a workload of a kind with
	// replicas keeps asleep. One at or below it is left as it is.
	Replicas int64
	// LoadBalancers is params.loadBalancers: LoadBalancers parked too.
	LoadBalancers bool
	// Patches is params.patches, applied while asleep, undone at the wake.
	Patches []patch.Patch
}

// Selector picks workloads of one kind by their own labels.
type Selector struct {
	// Kind is one of KnownKinds, normalized from any case, or the name of
	// another kind with a scale subresource as written (Kind or Kind.group;
	// see ScaleKindName).
	Kind string
	// Labels the workload itself must carry; empty matches all of Kind.
	Labels map[string]string
}

// Rule is what a rule matches namespaces by. A namespace matches when it
// satisfies Selector (if set) and at least one of Patterns (if any).
type Rule struct {
	// Selector is spec.namespaceSelector, nil when absent.
	Selector labels.Selector
	// Patterns are spec.namePatterns, shell-style globs (path.Match syntax)
	// on the namespace name.
	Patterns []string
	// Enforce is spec.enforce: the rule acts on every namespace it matches,
	// also one that a manager of its own governs.
	Enforce bool
}

// Matches reports whether the namespace called name with labels set
// matches the rule.
func (r Rule) Matches(name string, set labels.Labels) bool {
	if r.Selector != nil && !r.Selector.Matches(set) {
		return false
	}
	if len(r.Patterns) == 0 {
		return true
	}
	for _, p := range r.Patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}
