package report

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// State is what a sweep did with one manager. The values are part of the
// JSON output's stable schema.
type State string

const (
	// StateDeactivated: spec.deactivated is true (or this sweep set it, the
	// action having succeeded before); left alone.
	StateDeactivated State = "deactivated"
	// StateInvalid: the manager does not parse; see Problems.
	StateInvalid State = "invalid"
	// StateForbidden: the guards refuse its target.
	StateForbidden State = "forbidden"
	// StateTargetMissing: the target namespace does not exist.
	StateTargetMissing State = "target-missing"
	// StateTargetTerminating: the target namespace is being deleted.
	StateTargetTerminating State = "target-terminating"
	// StateWaiting: no policy holds yet.
	StateWaiting State = "waiting"
	// StatePlanned: a policy holds; a dry run reports what it would do.
	StatePlanned State = "planned"
	// StateFired: the action succeeded and the manager is deactivated, or,
	// having deleted the namespace it lives in, goes with it.
	StateFired State = "fired"
	// StateFailed: the action or an API request failed; retried next sweep.
	StateFailed State = "failed"
	// StateDeferred: a policy holds but the action cap was reached.
	StateDeferred State = "deferred"
	// StateBusy: another sweep holds a live claim, or the manager or its
	// target changed after this sweep listed it.
	StateBusy State = "busy"
	// StateDone: a rule's action succeeded on this namespace in this
	// generation of the rule; the pair is left alone until the rule changes.
	StateDone State = "done"
	// StateGoverned: the namespace matches a rule, but a single-target
	// manager aims at it, and governs it alone.
	StateGoverned State = "governed"
	// StateAsleep: a SLEEP policy put the target to sleep and still holds;
	// it wakes when the policy stops holding.
	StateAsleep State = "asleep"
)

// States lists every state, in the order of their constants: what
// --state may name.
var States = []State{StateDeactivated, StateInvalid, StateForbidden, StateTargetMissing, StateTargetTerminating, StateWaiting,
	StatePlanned, StateFired, StateFailed, StateDeferred, StateBusy, StateDone, StateGoverned, StateAsleep}

// Entry is the report on one manager.
type Entry struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Rule: Namespace and Name name a rule, and the entry is about the
	// rule itself or, with a Target, about one (rule, namespace) pair.
	Rule bool `json:"rule,omitempty"`
	// Target is the namespace the manager acts on.
	Target string `json:"target,omitempty"`
	// Owner names the target's owner, <resource>.<group>/<namespace>/<name>
	// (policy.Owner.Ref): when a condition of the manager weighs it and one
	// was read or remembered, or when one that exists may make the target
	// again (an action removes it, or it came back).
	Owner string `json:"owner,omitempty"`
	// MayComeBack: the action removes the target while Owner exists,
	// which may make it again (Argo CD's self-heal, Flux's reconciliation).
	MayComeBack bool `json:"mayComeBack,omitempty"`
	// CameBack: the target came back, made again after this rule deleted
	// a namespace of its name (as the rule's status's latest actions
	// remember it); the message says so, and Owner names an owner that
	// exists, which may have made it.
	CameBack *CameBack `json:"cameBack,omitempty"`
	// TargetStays: the action, one that deletes the target, left it
	// standing this sweep (a DELETE via owner deleted the owner first). Not
	// in the JSON: the entry's message says it.
	TargetStays bool  `json:"-"`
	State       State `json:"state"`
	// Policy and Action name the policy that holds, if any.
	Policy string `json:"policy,omitempty"`
	Action string `json:"action,omitempty"`
	// Due is when a waiting manager is next due, when time alone decides.
	Due *time.Time `json:"due,omitempty"`
	// Message says why, in a sentence.
	Message string `json:"message,omitempty"`
	// Problems lists every validation error of an invalid manager.
	Problems []string `json:"problems,omitempty"`
	// Conditions describes each policy evaluated, in order.
	Conditions []Condition `json:"conditions,omitempty"`
	// Effects lists what the action did, or would do in a dry run
	// (e.g. "scale Deployment/web from 3 to 0").
	Effects []string `json:"effects,omitempty"`
	// Woke: the action was a SLEEP policy's wake (else, for a SLEEP, its
	// sleep).
	Woke bool `json:"woke,omitempty"`
	// Undone says, of a target asleep whose workloads were woken since, who
	// woke which: one line per field manager, "BY: Kind/name, ...".
	Undone []string `json:"undone,omitempty"`
	// PutBack and LeftAwake count, of a target asleep whose woken workloads
	// were put back to sleep, those put back in the sweep (on the entry that
	// names who woke them, Undone, by every manager and rule of the target
	// so far; on the others, by this one) and those awake it left to the
	// next sweeps (a sweep puts back at most 50 of a namespace).
	PutBack   int `json:"putBack,omitempty"`
	LeftAwake int `json:"leftAwake,omitempty"`
	// Warnings says what a SLEEP without selectors left as it was, though
	// it did the rest: the API groups whose discovery failed, the workloads
	// whose sleep the API server refused.
	Warnings []string `json:"warnings,omitempty"`
	// HeldUntil is when the hold that keeps the manager (or pair) from
	// acting ends (HoldAnnotation).
	HeldUntil *time.Time `json:"heldUntil,omitempty"`
	// HoldIgnored says why holds were ignored: unparseable, or ending more
	// than --max-hold ahead.
	HoldIgnored string `json:"holdIgnored,omitempty"`
	// AnnotationIgnored says why the target's expiry or touched annotation
	// (policy.ExpiresAnnotation, policy.TouchedAnnotation) is ignored: it
	// does not parse, or a touch is more than policy.TouchLeeway ahead.
	AnnotationIgnored string `json:"annotationIgnored,omitempty"`
	// LastActivity is, for a manager (or pair) with an IDLE policy, the
	// newest activity in the target that policy counted.
	LastActivity *LastActivity `json:"lastActivity,omitempty"`
	// Traffic is, for a manager (or pair) with an IDLE policy that reads
	// traffic, what its source answered, once the sweep read it.
	Traffic *Traffic `json:"traffic,omitempty"`
	// Stuck, on a target-terminating entry, says why the namespace has
	// been Terminating for longer than --stuck-after.
	Stuck *Stuck `json:"stuck,omitempty"`
	// Reclaimed is what a DELETE or SCALE_DOWN carried out (planned, in a
	// dry run) frees.
	Reclaimed *Reclaimed `json:"reclaimed,omitempty"`
	// Warning is the warning (policies[].warnBefore) a waiting subject was
	// told this sweep, planned in a dry run.
	Warning *Warning `json:"warning,omitempty"`
}

// Warning is a warning told before a policy acts: its action is due at
// Due, within Before.
type Warning struct {
	Policy string    `json:"policy"`
	Action string    `json:"action"`
	Due    time.Time `json:"due"`
	Before string    `json:"before"`
	// State is fired once told, planned in a dry run.
	State State `json:"state"`
}

// LastActivity is something that happened in a namespace, and when: its
// creation, its policy.TouchedAnnotation, or the creation of a pod,
// ReplicaSet, ControllerRevision or Job in it.
type LastActivity struct {
	At   metav1.Time `json:"at"`
	What string      `json:"what"`
}

// TrafficUnknown says why the traffic e's IDLE policy read is not known,
// "" when it is or none was read.
func (e Entry) TrafficUnknown() string {
	if e.Traffic == nil {
		return ""
	}
	return e.Traffic.Unknown
}

// Traffic is what a traffic source answered of the requests to a
// namespace in a window: their count, or why there is none (Unknown), on
// which the IDLE policy waits.
type Traffic struct {
	// Source is "preset NAME" or "a query".
	Source        string `json:"source"`
	WindowSeconds int64  `json:"windowSeconds"`
	// Requests is nil when Unknown says why there is no answer.
	Requests *float64 `json:"requests,omitempty"`
	Unknown  string   `json:"unknown,omitempty"`
	// Note says other namespaces the requests may have been to.
	Note string `json:"note,omitempty"`
}

// Stuck says why a namespace is still Terminating.
type Stuck struct {
	// Since is the namespace's deletionTimestamp.
	Since time.Time `json:"since"`
	// Reasons say what holds it, each in words a person can act on.
	Reasons []StuckReason `json:"reasons"`
}

// StuckReason is one thing that holds a namespace in Terminating.
type StuckReason struct {
	// Reason is one of the Stuck* constants: the label of the metric
	// nsman_namespaces_stuck.
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Reasons a namespace is stuck, from the namespace controller's conditions
// and the namespace's own finalizers.
const (
	// StuckDiscoveryFailure: an API group could not be discovered (an
	// aggregated APIService is unavailable), so the namespace controller
	// cannot tell whether the namespace is empty.
	StuckDiscoveryFailure = "DiscoveryFailure"
	// StuckGroupVersionParsingFailure: the namespace controller could not
	// parse a group version the API server serves.
	StuckGroupVersionParsingFailure = "GroupVersionParsingFailure"
	// StuckContentFailure: deleting some content failed.
	StuckContentFailure = "ContentFailure"
	// StuckContentRemaining: objects are left.
	StuckContentRemaining = "ContentRemaining"
	// StuckFinalizersRemaining: objects are left whose finalizers nobody
	// removes.
	StuckFinalizersRemaining = "FinalizersRemaining"
	// StuckNamespaceFinalizers: the namespace has finalizers of its own.
	StuckNamespaceFinalizers = "NamespaceFinalizers"
	// StuckUnknown: the namespace controller has said nothing (is
	// kube-controller-manager running?).
	StuckUnknown = "Unknown"
)

// StuckReasons lists every reason, so that nsman_namespaces_stuck has a
// series for each.
var StuckReasons = []string{StuckDiscoveryFailure, StuckGroupVersionParsingFailure, StuckContentFailure,
	StuckContentRemaining, StuckFinalizersRemaining, StuckNamespaceFinalizers, StuckUnknown}

// CameBack is when a rule deleted a namespace, and when a namespace of
// that name was made again.
type CameBack struct {
	Deleted time.Time `json:"deleted"`
	Created time.Time `json:"created"`
}

// Reclaimed is what an action frees: the CPU and memory requested by the
// pods that go away, the storage requested by the PersistentVolumeClaims
// that go, and the Services of type LoadBalancer.
type Reclaimed struct {
	CPU           resource.Quantity `json:"cpu"`
	Memory        resource.Quantity `json:"memory"`
	Storage       resource.Quantity `json:"storage"`
	LoadBalancers int               `json:"loadBalancers"`
}

// String is r as a person reads it: "cpu 1500m, memory 2Gi, storage 10Gi,
// 1 load balancer(s)".
func (r Reclaimed) String() string {
	return fmt.Sprintf("cpu %s, memory %s, storage %s, %d load balancer(s)", r.CPU.String(), r.Memory.String(), r.Storage.String(), r.LoadBalancers)
}

// Add adds what o frees to r.
func (r *Reclaimed) Add(o Reclaimed) {
	r.CPU.Add(o.CPU)
	r.Memory.Add(o.Memory)
	r.Storage.Add(o.Storage)
	r.LoadBalancers += o.LoadBalancers
}

// IsZero reports whether r frees nothing.
func (r Reclaimed) IsZero() bool {
	return r.CPU.IsZero() && r.Memory.IsZero() && r.Storage.IsZero() && r.LoadBalancers == 0
}

// Cause is what identifies why st is stuck: its reasons, not their words,
// which change with the counts of objects left, and with whatever names a
// tenant gives the finalizers in its namespace. A sweep writes the status,
// and an Event, only when it changes.
func (st *Stuck) Cause() string {
	if st == nil {
		return ""
	}
	reasons := make([]string, 0, len(st.Reasons))
	for _, r := range st.Reasons {
		reasons = append(reasons, r.Reason)
	}
	return strings.Join(reasons, ",")
}

// Condition is one policy's condition state in an Entry.
type Condition struct {
	Policy string     `json:"policy"`
	Holds  bool       `json:"holds"`
	Detail string     `json:"detail"`
	Due    *time.Time `json:"due,omitempty"`
	// OutsideWindows, of a policy with windows, is when its condition
	// comes due (or came: it holds) while they are closed; Due is then
	// when the next opens.
	OutsideWindows *time.Time `json:"outsideWindows,omitempty"`
}

// Summary totals a sweep.
type Summary struct {
	// Now is the time the sweep evaluated at: the API server's, or --at.
	Now    time.Time `json:"now"`
	DryRun bool      `json:"dryRun"`
	// Managers counts the report's entries: one per manager this sweep
	// handled (those listed, less those of other shards), and one per
	// (rule, namespace) pair.
	Managers int `json:"managers"`
	// Shard, when the managers are sharded, says which part this sweep
	// handled.
	Shard *Shard `json:"shard,omitempty"`
	// States counts the managers by state.
	States map[State]int `json:"states"`
	// Requests counts the API requests made, by HTTP method.
	Requests map[string]int `json:"requests"`
	// DurationSeconds is the sweep's wall time.
	DurationSeconds float64 `json:"durationSeconds"`
	// Notifications counts the notifications of --notify-url, sent and
	// failed; absent when there is none to send (no URL, or a dry run).
	Notifications map[string]int `json:"notifications,omitempty"`
	// TrafficQueries counts the traffic queries of IDLE conditions (one
	// per source and window), answered and unanswered.
	TrafficQueries map[string]int `json:"trafficQueries,omitempty"`
	// ListError, when set, says why listing the managers stopped half-way:
	// the report covers the managers listed before.
	ListError string `json:"listError,omitempty"`
	// StaleRecords counts the records of rules that are gone which this
	// sweep removed from namespaces (or would have, in a dry run).
	StaleRecords int `json:"staleRecords,omitempty"`
	// StaleRecordsLeft counts the records of rules that are gone left for
	// the next sweep, on the namespaces beyond MaxStaleNamespaces.
	StaleRecordsLeft int `json:"staleRecordsLeft,omitempty"`
	// Reclaimed sums what the entries' actions freed (would free, in a dry
	// run); absent when no entry says.
	Reclaimed *Reclaimed `json:"reclaimed,omitempty"`
	// ReclaimUnknown counts the DELETEs done whose reclaim could not be
	// read (their effects say why): Reclaimed leaves them out.
	ReclaimUnknown int `json:"reclaimUnknown,omitempty"`
	// FrozenUntil, when the sweep ran in a freeze (--freeze), is when it
	// ends: nothing acted, and what was due waits until then.
	FrozenUntil *time.Time `json:"frozenUntil,omitempty"`
	// Stuck counts the namespaces the entries say are stuck in Terminating.
	Stuck int `json:"stuck,omitempty"`
	// MissingTrusted lists the trusted namespaces (--trusted-namespaces)
	// that do not exist: whoever may create namespaces may create one, and
	// its managers and rules would be trusted.
	MissingTrusted []string `json:"missingTrusted,omitempty"`
}

// Report is the result of a sweep: one entry per manager and a summary.
type Report struct {
	// Version identifies the JSON schema of the report.
	Version string  `json:"version"`
	Entries []Entry `json:"managers"`
	Summary Summary `json:"summary"`
}

// Shard describes the part of the managers one sweep handles.
type Shard struct {
	// Index is this sweep's shard, from 0 to Count-1.
	Index int `json:"index"`
	// Count is the number of shards the managers are split into.
	Count int `json:"count"`
	// Skipped counts the managers listed that belong to other shards.
	Skipped int `json:"skipped"`
}

// MarshalJSON writes r with every list a list, never null: an empty
// cluster's report has "managers": [], so that jq '.managers[]' works.
func (r Report) MarshalJSON() ([]byte, error) {
	type plain Report
	if r.Entries == nil {
		r.Entries = []Entry{}
	}
	return json.Marshal(plain(r))
}

// MarshalJSON writes s with its counts as objects, never null.
func (s Summary) MarshalJSON() ([]byte, error) {
	type plain Summary
	if s.States == nil {
		s.States = map[State]int{}
	}
	if s.Requests == nil {
		s.Requests = map[string]int{}
	}
	return json.Marshal(plain(s))
}

// ReportVersion is the schema version of Report's JSON form.
const ReportVersion = "nsman.sweep/v1"

// Failed reports whether any manager failed, or the listing did.
func (r Report) Failed() bool { return r.Summary.States[StateFailed] > 0 || r.Summary.ListError != "" }

// Results of an action: in a manager's LastAction, and the label of
// nsman_actions_total.
const (
	ResultSucceeded = "succeeded"
	ResultFailed    = "failed"
)

// ResultOf is what an entry in state s says of its action: succeeded,
// failed, planned or deferred; "" when s says none was tried.
func ResultOf(s State) string {
	switch s {
	case StateFired:
		return ResultSucceeded
	case StateFailed:
		return ResultFailed
	case StatePlanned, StateDeferred:
		return string(s)
	}
	return ""
}
