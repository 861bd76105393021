package sweep

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// TestPairAnnotationHidesTheRuleUID: the key of a rule's record, which
// whoever reads the namespace sees, is a valid annotation key that does
// not hold the rule's UID, one per rule.
func TestPairAnnotationHidesTheRuleUID(t *testing.T) {
	a, b := types.UID("0b6f2c1e-5d0a-4b8e-9a61-7e3f1c2d4a5b"), types.UID("0b6f2c1e-5d0a-4b8e-9a61-7e3f1c2d4a5c")
	key := PairAnnotation(a)
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		t.Errorf("%s is no annotation key: %v", key, errs)
	}
	if !strings.HasPrefix(key, PairAnnotationPrefix) {
		t.Errorf("%s does not begin with %s", key, PairAnnotationPrefix)
	}
	for _, part := range strings.Split(string(a), "-") {
		if strings.Contains(key, part) {
			t.Errorf("%s holds %q, a part of the rule's UID %s", key, part, a)
		}
	}
	// What docs/rules.md tells to compute it with: printf 'record/%s' UID
	// | sha256sum | cut -c1-32.
	sum := sha256.Sum256([]byte("record/" + string(a)))
	if want := PairAnnotationPrefix + hex.EncodeToString(sum[:])[:32]; key != want {
		t.Errorf("PairAnnotation(%s) = %s, want %s as docs/rules.md computes it", a, key, want)
	}
	if key != PairAnnotation(a) || key == PairAnnotation(b) {
		t.Errorf("PairAnnotation(%s) = %s, PairAnnotation(%s) = %s: want one key per rule, always the same", a, key, b, PairAnnotation(b))
	}
}

// TestRecordOfReadsTheLegacyKey: a record written under the rule's UID
// (legacyPairAnnotation) is the rule's while none is under its
// PairAnnotation; the newer one wins.
func TestRecordOfReadsTheLegacyKey(t *testing.T) {
	uid := types.UID("0b6f2c1e-5d0a-4b8e-9a61-7e3f1c2d4a5b")
	key, legacy := PairAnnotation(uid), legacyPairAnnotation(uid)
	for _, tc := range []struct {
		name          string
		pairs         map[string]string
		wantRaw, want string
	}{
		{"none", nil, "", ""},
		{"legacy", map[string]string{legacy: "old"}, "old", legacy},
		{"current", map[string]string{key: "new"}, "new", key},
		{"both", map[string]string{key: "new", legacy: "old"}, "new", key},
		{"another rule's", map[string]string{PairAnnotation("other"): "x"}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, at := recordOf(namespaceInfo{pairs: tc.pairs}, key, legacy)
			if raw != tc.wantRaw || at != tc.want {
				t.Errorf("recordOf: %q at %q, want %q at %q", raw, at, tc.wantRaw, tc.want)
			}
		})
	}
	if live := pairAnnotations(map[types.UID]bool{uid: true}); !live[key] || !live[legacy] || len(live) != 2 {
		t.Errorf("pairAnnotations: %v, want %s and %s", live, key, legacy)
	}
}
