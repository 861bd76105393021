package status

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/policy"
)

func TestIdempotencyKeys(t *testing.T) {
	m := policy.Manager{UID: "m-1", Generation: 3}
	key := IdempotencyKey(m, "delete")
	if len(key) != 32 || strings.Trim(key, "0123456789abcdef") != "" {
		t.Fatalf("IdempotencyKey = %q, want 32 hex digits", key)
	}
	later := m
	later.Generation = 4
	other := m
	other.UID = "m-2"
	for name, k := range map[string]string{
		"another generation": IdempotencyKey(later, "delete"),
		"another policy":     IdempotencyKey(m, "hook"),
		"another manager":    IdempotencyKey(other, "delete"),
		"a rule's pair":      PairIdempotencyKey(m, "delete", "ns-1"),
	} {
		if k == key {
			t.Errorf("%s: the same key %s", name, k)
		}
	}
	if IdempotencyKey(m, "delete") != key {
		t.Error("the same firing: another key")
	}
	if PairIdempotencyKey(m, "delete", "ns-1") == PairIdempotencyKey(m, "delete", "ns-2") {
		t.Error("a namespace recreated under its name (another uid): the same key")
	}
}

func TestPairAnnotations(t *testing.T) {
	uid := types.UID("0b5c6ad4-rule")
	key, legacy := PairAnnotation(uid), LegacyPairAnnotation(uid)
	if !strings.HasPrefix(key, PairAnnotationPrefix) || strings.Contains(key, string(uid)) {
		t.Errorf("PairAnnotation = %q, want the prefix and no rule UID", key)
	}
	if legacy != PairAnnotationPrefix+string(uid) {
		t.Errorf("LegacyPairAnnotation = %q", legacy)
	}
	live := PairAnnotations(map[types.UID]bool{uid: true, "other": true})
	if len(live) != 4 || !live[key] || !live[legacy] || !live[PairAnnotation("other")] {
		t.Errorf("PairAnnotations = %v, want both keys of both rules", live)
	}
	if len(PairAnnotations(nil)) != 0 {
		t.Error("no rule: some keys live")
	}
}

// TestNotifyChannelAnnotationIsParsed: policy.Parse reads a manager's
// NotifyChannelAnnotation, as the sweep keeps a namespace's.
func TestNotifyChannelAnnotationIsParsed(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": policy.Group + "/" + policy.Version, "kind": policy.Kind, "spec": map[string]any{}}}
	obj.SetAnnotations(map[string]string{NotifyChannelAnnotation: "team-a"})
	if m, _ := policy.Parse(obj); m.NotifyChannel != "team-a" {
		t.Errorf("NotifyChannel %q, want team-a", m.NotifyChannel)
	}
}
