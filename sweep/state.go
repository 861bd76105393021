package sweep

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/policy"
)

// Annotations nsman keeps on a manager under the original CRD, which has no
// status subresource. Under nsman's CRD the same state lives in status.
const (
	annotationPrefix = "nsman.k8s.consol.de/"
	// ClaimAnnotation holds the Claim of a sweep that is acting on the
	// manager.
	ClaimAnnotation = annotationPrefix + "claim"
	// LastActionAnnotation holds the LastAction.
	LastActionAnnotation = annotationPrefix + "last-action"
	// ChecksAnnotation holds the progress of PODS_SUCCEED policies with
	// minChecks above 1.
	ChecksAnnotation = annotationPrefix + "checks"
)

// Claim marks a manager as being acted on by one sweep, so that no other
// sweep acts on it too. It is written with the resourceVersion the sweep
// listed, so of two sweeps only one can claim.
type Claim struct {
	Policy  string    `json:"policy"`
	Action  string    `json:"action"`
	Sweep   string    `json:"sweep"`
	Expires time.Time `json:"expires"`
	// Generation is the manager generation the claim was made for.
	Generation int64 `json:"generation"`
	// TargetUID is the uid of the target namespace when claimed, so that a
	// sweep completing the claim never acts on a namespace recreated since.
	TargetUID types.UID `json:"targetUID,omitempty"`
}

// LastAction records the outcome of the manager's latest action.
type LastAction struct {
	Policy  string    `json:"policy"`
	Action  string    `json:"action"`
	Result  string    `json:"result"`
	Message string    `json:"message,omitempty"`
	Time    time.Time `json:"time"`
}

// Results in LastAction.
const (
	ResultSucceeded = "succeeded"
	ResultFailed    = "failed"
)

// managerState is what nsman has stored on a manager.
type managerState struct {
	claim  *Claim
	checks map[string]policy.CheckState
}

// Status is nsman's state in the status subresource of nsman's CRD.
type Status struct {
	Claim      *Claim                       `json:"claim,omitempty"`
	LastAction *LastAction                  `json:"lastAction,omitempty"`
	Checks     map[string]policy.CheckState `json:"checks,omitempty"`
}

// stateStore knows where nsman keeps its state on managers: in status when
// the CRD has a status subresource, else in annotations.
type stateStore struct {
	inStatus bool
}

// managerPatch is one JSON merge patch of a manager or its status.
type managerPatch struct {
	subresource string
	body        []byte
}

// read decodes nsman's state from obj. State that does not decode (edited by
// hand, say) counts as absent.
func (s stateStore) read(obj *unstructured.Unstructured) managerState {
	var st managerState
	if s.inStatus {
		raw, ok := obj.Object["status"].(map[string]any)
		if !ok {
			return st
		}
		var status Status
		data, err := json.Marshal(raw)
		if err == nil && json.Unmarshal(data, &status) == nil {
			st.claim, st.checks = status.Claim, status.Checks
		}
		return st
	}
	ann := obj.GetAnnotations()
	if raw, ok := ann[ClaimAnnotation]; ok {
		var c Claim
		if json.Unmarshal([]byte(raw), &c) == nil {
			st.claim = &c
		}
	}
	if raw, ok := ann[ChecksAnnotation]; ok {
		_ = json.Unmarshal([]byte(raw), &st.checks)
	}
	return st
}

// patch builds a patch that sets nsman's state fields (nil removes one).
// resourceVersion, when set, makes it conditional; spec, when set, is merged
// into the manager's spec (never possible in the same patch as status).
func (s stateStore) patch(fields map[string]any, resourceVersion string, spec map[string]any) managerPatch {
	meta := map[string]any{}
	if resourceVersion != "" {
		meta["resourceVersion"] = resourceVersion
	}
	body := map[string]any{"metadata": meta}
	var subresource string
	if s.inStatus {
		subresource = "status"
		body["status"] = fields
	} else {
		annotations := map[string]any{}
		for key, value := range fields {
			if value != nil {
				value = mustJSON(value)
			}
			annotations[annotationKeys[key]] = value
		}
		meta["annotations"] = annotations
		if spec != nil {
			body["spec"] = spec
		}
	}
	return managerPatch{subresource: subresource, body: []byte(mustJSON(body))}
}

// annotationKeys maps status fields to the annotations that hold them under
// the original CRD.
var annotationKeys = map[string]string{"claim": ClaimAnnotation, "lastAction": LastActionAnnotation, "checks": ChecksAnnotation}

func (s stateStore) claimPatch(resourceVersion string, c Claim) managerPatch {
	return s.patch(map[string]any{"claim": c}, resourceVersion, nil)
}

func (s stateStore) checksPatch(checks map[string]policy.CheckState) managerPatch {
	var value any // nil removes the field
	if len(checks) > 0 {
		value = checks
	}
	return s.patch(map[string]any{"checks": value}, "", nil)
}

// finishPatches record an action's outcome, release the claim and, when it
// succeeded, deactivate the manager. With status, spec.deactivated goes
// first: should the second patch be lost, the manager is still never acted
// on twice.
func (s stateStore) finishPatches(last LastAction, deactivate bool) []managerPatch {
	fields := map[string]any{"claim": nil, "checks": nil, "lastAction": last}
	var spec map[string]any
	if deactivate {
		spec = map[string]any{"deactivated": true}
	}
	if !s.inStatus {
		return []managerPatch{s.patch(fields, "", spec)}
	}
	var patches []managerPatch
	if deactivate {
		patches = append(patches, managerPatch{body: []byte(mustJSON(map[string]any{"spec": spec}))})
	}
	return append(patches, s.patch(fields, "", nil))
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
