package sweep

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/policy"
)

// Annotations nsman keeps on a manager. They work under the original CRD,
// which has no status subresource.
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

// readState decodes nsman's annotations. An annotation that does not decode
// (edited by hand, say) counts as absent.
func readState(obj *unstructured.Unstructured) managerState {
	var st managerState
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
