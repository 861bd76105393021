package sweep

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/policy"
)

// StatusAnnotation holds a manager's Status, as JSON, under the original CRD,
// which has no status subresource. Under nsman's CRD the same record is the
// status.
const StatusAnnotation = "nsman.k8s.consol.de/status"

// Status is what nsman records on a manager: what the last sweep found, the
// outcome of the last action, a sweep's claim while it acts, and minChecks
// progress. It is written only when it changes.
type Status struct {
	// ObservedGeneration is the generation of the spec this status describes.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// State is the State of the manager's report entry.
	State State `json:"state,omitempty"`
	// Target is the namespace the manager acts on.
	Target string `json:"target,omitempty"`
	// NextDue is when a waiting manager is next due, when time alone decides.
	NextDue *metav1.Time `json:"nextDue,omitempty"`
	// Message says why, in a sentence.
	Message string `json:"message,omitempty"`
	// Conditions holds ConditionFired.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Claim is set while a sweep acts on the manager.
	Claim *Claim `json:"claim,omitempty"`
	// LastAction is the outcome of the latest action.
	LastAction *LastAction `json:"lastAction,omitempty"`
	// Checks is the progress of PODS_SUCCEED policies with minChecks above 1.
	Checks map[string]policy.CheckState `json:"checks,omitempty"`
	// Fired lists the stages (policies that are not final) that fired in
	// this generation: later sweeps skip them. At most one per policy.
	Fired []FiredPolicy `json:"fired,omitempty"`
	// IgnoredHold says why the holds on the manager or its target were
	// ignored, while they are: a Warning Event is written when it changes.
	IgnoredHold string `json:"ignoredHold,omitempty"`
	// Rule summarizes, for a rule, the namespaces it matches.
	Rule *RuleSummary `json:"rule,omitempty"`
}

// FiredPolicy is a stage that fired: a policy that is not final, which
// fires once per generation and leaves the manager standing.
type FiredPolicy struct {
	Policy     string    `json:"policy"`
	Generation int64     `json:"generation"`
	Time       time.Time `json:"time"`
	// Spec, for a rule's namespace, is the rule's policy.Manager.Arming:
	// pausing and resuming the rule does not fire a stage again.
	Spec string `json:"spec,omitempty"`
}

// firedIn names the stages of fired that fired in generation (or, with
// spec, under that spec).
func firedIn(fired []FiredPolicy, generation int64, spec string) map[string]bool {
	out := map[string]bool{}
	for _, f := range fired {
		if f.Generation == generation || spec != "" && f.Spec == spec {
			out[f.Policy] = true
		}
	}
	return out
}

// addFired records that stage name fired in generation, dropping what
// fired in other generations: the list never outgrows the policies.
func addFired(fired []FiredPolicy, name string, generation int64, spec string, now time.Time) []FiredPolicy {
	out := slices.DeleteFunc(slices.Clone(fired), func(f FiredPolicy) bool {
		return f.Policy == name || f.Generation != generation && (spec == "" || f.Spec != spec)
	})
	return append(out, FiredPolicy{Policy: name, Generation: generation, Time: now.UTC(), Spec: spec})
}

// clone returns a copy that shares nothing that observe or the sweep
// modifies in place.
func (st Status) clone() Status {
	st.Conditions = slices.Clone(st.Conditions)
	st.Fired = slices.Clone(st.Fired)
	st.Checks = maps.Clone(st.Checks)
	if st.LastAction != nil {
		st.LastAction = new(*st.LastAction)
	}
	return st
}

// StateActing is never in a report: it is the state a manager's status
// shows while the sweep that claimed it acts, with ConditionFired False for
// the reason InProgress. The status says an action succeeded only after it
// did.
const StateActing State = "acting"

// ConditionFired is True once the manager's action succeeded; while False,
// its reason says why not yet.
const ConditionFired = "Fired"

// Reasons of ConditionFired, by state.
var conditionReasons = map[State]string{
	StateActing:            "InProgress",
	StateWaiting:           "Waiting",
	StateFired:             "Fired",
	StateFailed:            "Failed",
	StateDeferred:          "Deferred",
	StateInvalid:           "Invalid",
	StateForbidden:         "Forbidden",
	StateTargetMissing:     "TargetMissing",
	StateTargetTerminating: "TargetTerminating",
	StateWatching:          "Watching",
}

// maxMessage bounds the messages stored on a manager.
const maxMessage = 1024

// observe sets the fields that describe entry e, keeping the condition's
// transition time when its status did not change.
func (st *Status) observe(e Entry, generation int64, now time.Time) {
	st.ObservedGeneration = generation
	st.State = e.State
	st.Target = e.Target
	st.NextDue = nil
	if e.Due != nil {
		st.NextDue = &metav1.Time{Time: *e.Due}
	}
	st.Message = truncate(e.Message, maxMessage)
	status := metav1.ConditionFalse
	if e.State == StateFired {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type:               ConditionFired,
		Status:             status,
		ObservedGeneration: generation,
		LastTransitionTime: metav1.Time{Time: now.UTC().Truncate(time.Second)},
		Reason:             conditionReasons[e.State],
		Message:            st.Message,
	})
}

// truncate cuts s to at most n bytes, ending in "..." when cut, and never
// in the middle of a UTF-8 sequence: the API server refuses invalid UTF-8.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := max(n-3, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// Claim marks a manager as being acted on by one sweep, so that no other
// sweep acts on it too. It is written with the resourceVersion the sweep
// listed, so of two sweeps only one can claim; while it has not expired,
// every other sweep leaves the manager alone, whatever its generation.
type Claim struct {
	Policy string `json:"policy"`
	Action string `json:"action"`
	Sweep  string `json:"sweep"`
	// Expires is the claiming sweep's server time when it claimed, plus
	// --claim-ttl; the action's deadline is --claim-ttl less claimMargin
	// from the same moment, so the claim outlives the action.
	Expires time.Time `json:"expires"`
	// Generation is the manager generation the claim was made for.
	Generation int64 `json:"generation"`
	// TargetUID is the uid of the target namespace when claimed, so that a
	// sweep completing the claim never acts on a namespace recreated since.
	TargetUID types.UID `json:"targetUID,omitempty"`
	// Spec, on a rule's claim, is the rule's policy.Manager.Arming: a claim
	// survives pausing and resuming the rule.
	Spec string `json:"spec,omitempty"`
}

// LastAction records the outcome of the manager's latest action.
type LastAction struct {
	Policy  string    `json:"policy"`
	Action  string    `json:"action"`
	Result  string    `json:"result"`
	Message string    `json:"message,omitempty"`
	Time    time.Time `json:"time"`
	// Uncertain: the action failed without an answer from the API server
	// (a reset connection, a timeout, a 5xx), so it may have happened.
	Uncertain bool `json:"uncertain,omitempty"`
}

// uncertain reports an error after which an API request may or may not
// have taken effect: no answer, or a server error.
func uncertain(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	return status.Status().Code >= 500 || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err)
}

// Results in LastAction.
const (
	ResultSucceeded = "succeeded"
	ResultFailed    = "failed"
)

// stateStore knows where a manager's Status lives: in the status subresource
// when the CRD has one, else in StatusAnnotation.
type stateStore struct {
	inStatus bool
}

// managerPatch is one patch of a manager or, with subresource "status", of
// its status: a JSON merge patch, or with jsonPatch an RFC 6902 JSON patch.
type managerPatch struct {
	subresource string
	jsonPatch   bool
	body        []byte
}

// read decodes the Status of a listed manager. A record that does not
// decode (edited by hand, say) counts as absent.
func (s stateStore) read(m listed) Status {
	raw := []byte(m.status)
	if !s.inStatus {
		raw = []byte(m.obj.GetAnnotations()[StatusAnnotation])
	}
	var st Status
	if len(raw) > 0 && json.Unmarshal(raw, &st) != nil {
		return Status{}
	}
	return st
}

// update returns the patch that turns the stored Status from into to, and
// false when they are equal. A resourceVersion makes the patch conditional.
// deactivate sets spec.deactivated in the same patch, which only the
// annotation store can do: with a status subresource, spec needs a patch of
// its own (deactivatePatch).
func (s stateStore) update(from, to Status, resourceVersion string, deactivate bool) (managerPatch, bool) {
	if mustJSON(from) == mustJSON(to) && !deactivate {
		return managerPatch{}, false
	}
	metadata := map[string]any{}
	if resourceVersion != "" {
		metadata["resourceVersion"] = resourceVersion
	}
	body := map[string]any{"metadata": metadata}
	if s.inStatus {
		diff, err := jsonpatch.CreateMergePatch([]byte(mustJSON(from)), []byte(mustJSON(to)))
		if err != nil {
			panic(err) // both sides are marshalled Status values
		}
		var status map[string]any
		_ = json.Unmarshal(diff, &status)
		body["status"] = status
		return managerPatch{subresource: "status", body: []byte(mustJSON(body))}, true
	}
	metadata["annotations"] = map[string]any{StatusAnnotation: mustJSON(to)}
	if deactivate {
		body["spec"] = map[string]any{"deactivated": true}
	}
	return managerPatch{body: []byte(mustJSON(body))}, true
}

// deactivatePatch sets spec.deactivated. It touches no claim, so it needs
// no condition.
func deactivatePatch() managerPatch {
	return managerPatch{body: []byte(`{"spec":{"deactivated":true}}`)}
}

// settle returns the patch that replaces the claimed Status, which this
// sweep wrote, with to: a JSON patch whose first operation tests that the
// claim is still this sweep's, so that the write fails (and changes nothing)
// when anyone changed it since. deactivate sets spec.deactivated in the same
// patch, which only the annotation store can do.
func (s stateStore) settle(claimed, to Status, deactivate bool) managerPatch {
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	if s.inStatus {
		return managerPatch{subresource: "status", jsonPatch: true, body: []byte(mustJSON([]op{
			{"test", "/status/claim/sweep", claimed.Claim.Sweep},
			{"replace", "/status", to},
		}))}
	}
	// The annotation is compared whole: it is the string the claim wrote.
	path := annotationPointer(StatusAnnotation)
	ops := []op{{"test", path, mustJSON(claimed)}, {"replace", path, mustJSON(to)}}
	if deactivate {
		ops = append(ops, op{"add", "/spec/deactivated", true})
	}
	return managerPatch{jsonPatch: true, body: []byte(mustJSON(ops))}
}

// IdempotencyKey identifies one firing of one policy of one manager
// generation. It is derived, not stored, so a sweep that completes another's
// claim sends the same key.
func IdempotencyKey(m policy.Manager, policyName string) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%d/%s", m.UID, m.Generation, policyName)))
	return hex.EncodeToString(sum[:16])
}

func mustJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain structs and maps are marshalled
	}
	return string(data)
}

// annotationPointer is the JSON pointer to annotation key, for a JSON patch.
func annotationPointer(key string) string {
	return "/metadata/annotations/" + strings.ReplaceAll(key, "/", "~1")
}
