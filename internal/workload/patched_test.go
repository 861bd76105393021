package workload

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/policy/patch"
)

// suspendRelease is the patch of a Flux HelmRelease's switch.
var suspendRelease = patch.Patch{Kind: "HelmRelease", Group: "helm.toolkit.fluxcd.io", Merge: map[string]any{"spec": map[string]any{"suspend": true}}}

// release is a HelmRelease whose spec is spec, with annotations.
func release(spec map[string]any, annotations map[string]string) *unstructured.Unstructured {
	return object("HelmRelease", spec, annotations)
}

// applyPatch is w with merge patch p applied, as the API server applies it.
func applyPatch(t *testing.T, w *unstructured.Unstructured, p map[string]any) *unstructured.Unstructured {
	t.Helper()
	doc, _ := json.Marshal(w.Object)
	raw, _ := json.Marshal(p)
	out, err := jsonpatch.MergePatch(doc, raw)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(out, &obj); err != nil {
		t.Fatal(err)
	}
	w = &unstructured.Unstructured{Object: obj}
	if len(w.GetAnnotations()) == 0 { // the API server keeps no empty map
		unstructured.RemoveNestedField(w.Object, "metadata", "annotations")
	}
	return w
}

// A patch's way: the sleep applies the patch with its record, once; the
// wake applies the inverse and drops the record, giving the object back
// as it was; a sleep on an object already as the patch makes it writes
// nothing.
func TestPatchedSleepsAndWakes(t *testing.T) {
	way := Patched(suspendRelease)
	for _, before := range []*unstructured.Unstructured{
		release(map[string]any{"interval": "5m"}, nil),
		release(map[string]any{"interval": "5m", "suspend": false}, map[string]string{"example.com/team": "a"}),
	} {
		p, effect := way.Sleep("HelmRelease/w", before, policy.SleepTo{})
		if p == nil || effect != "patch HelmRelease/w" {
			t.Fatalf("sleep of %v: %v, %q; want a patch", before.Object, p, effect)
		}
		asleep := applyPatch(t, before, p)
		if got, _, _ := unstructured.NestedBool(asleep.Object, "spec", "suspend"); !got || asleep.GetAnnotations()[status.PatchedAnnotation] == "" {
			t.Errorf("asleep: %v; want suspended, with its record", asleep.Object)
		}
		if again, _ := way.Sleep("HelmRelease/w", asleep, policy.SleepTo{}); again != nil {
			t.Errorf("a second sleep: %v, want none", again)
		}
		wake, effect, err := way.Wake("HelmRelease/w", asleep)
		if err != nil || effect != "unpatch HelmRelease/w" {
			t.Fatalf("wake: %q, %v", effect, err)
		}
		if woken := applyPatch(t, asleep, wake); !reflect.DeepEqual(woken.Object, before.Object) {
			t.Errorf("woken: %v; want it as before: %v", woken.Object, before.Object)
		}
	}
}

// An object changed back while asleep is patched again, its record the
// state it was changed to; an object changed since the patch is left at
// the wake, its record dropped; a record that does not read is an error.
func TestPatchedChangedWhileAsleep(t *testing.T) {
	way := Patched(suspendRelease)
	before := release(map[string]any{"interval": "5m"}, nil)
	p, _ := way.Sleep("HelmRelease/w", before, policy.SleepTo{})
	asleep := applyPatch(t, before, p)

	reverted := applyPatch(t, asleep, map[string]any{"spec": map[string]any{"suspend": false}})
	again, _ := way.Sleep("HelmRelease/w", reverted, policy.SleepTo{})
	if again == nil {
		t.Fatal("an object changed back while asleep is not patched again")
	}
	var rec struct{ Inverse map[string]any }
	_ = json.Unmarshal([]byte(again["metadata"].(map[string]any)["annotations"].(map[string]any)[status.PatchedAnnotation].(string)), &rec)
	if want := map[string]any{"spec": map[string]any{"suspend": false}}; !reflect.DeepEqual(rec.Inverse, want) {
		t.Errorf("its record's inverse %v, want %v: the state it was changed to", rec.Inverse, want)
	}

	wake, effect, err := way.Wake("HelmRelease/w", reverted)
	if err != nil || !strings.Contains(effect, "changed since nsman patched it") || !reflect.DeepEqual(wake, map[string]any{"metadata": dropRecord(status.PatchedAnnotation)}) {
		t.Errorf("wake of an object changed since: %v, %q, %v; want its record dropped alone", wake, effect, err)
	}
	if _, _, err := way.Wake("HelmRelease/w", release(nil, map[string]string{status.PatchedAnnotation: "{"})); err == nil {
		t.Error("a record that does not read: no error")
	}
	if p, effect, err := Patched(patch.Patch{}).Wake("HelmRelease/w", asleep); err != nil || p == nil || effect != "unpatch HelmRelease/w" {
		t.Errorf("restore's way, which knows no patch: %v, %q, %v; want the wake of the record", p, effect, err)
	}
	if p, _ := Patched(patch.Patch{}).Sleep("HelmRelease/w", before, policy.SleepTo{}); p != nil {
		t.Errorf("restore's way put an object to sleep: %v", p)
	}
}

// A record longer than MaxPatchedRecord is not written: the object is left
// as it is, and the effect says why.
func TestPatchedRecordIsBounded(t *testing.T) {
	values := map[string]any{"blob": strings.Repeat("x", MaxPatchedRecord)}
	way := Patched(patch.Patch{Kind: "HelmRelease", Group: "helm.toolkit.fluxcd.io", Merge: map[string]any{"spec": map[string]any{"values": nil}}})
	p, effect := way.Sleep("HelmRelease/w", release(map[string]any{"values": values}, nil), policy.SleepTo{})
	if p != nil || !strings.Contains(effect, "more than the 4096 nsman keeps") {
		t.Errorf("a record too long: %v, %q; want it left, saying why", p, effect)
	}
}

// Keep keeps of an object what its patch and its record's patch
// read, its name, version, and the labels and annotations asked for.
func TestPatchedKeep(t *testing.T) {
	rec, _ := json.Marshal(patchedRecord{Patch: map[string]any{"spec": map[string]any{"paused": true}}, Inverse: map[string]any{"spec": map[string]any{"paused": nil}}})
	obj := map[string]any{
		"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
		"metadata": map[string]any{"name": "w", "namespace": "ns", "resourceVersion": "7", "uid": "u", "managedFields": []any{map[string]any{"manager": "x"}},
			"labels":      map[string]any{"app": "web", status.KeepAwakeLabel: "true"},
			"annotations": map[string]any{"example.com/big": "x", status.PatchedAnnotation: string(rec)}},
		"spec":   map[string]any{"suspend": false, "paused": true, "values": map[string]any{"a": "b"}, "chart": map[string]any{"spec": map[string]any{"chart": "app"}}},
		"status": map[string]any{"conditions": []any{}},
	}
	Patched(suspendRelease).(Whole).Keep(obj, []string{status.KeepAwakeLabel}, nil)
	want := map[string]any{
		"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
		"metadata": map[string]any{"name": "w", "namespace": "ns", "resourceVersion": "7",
			"labels": map[string]any{status.KeepAwakeLabel: "true"}, "annotations": map[string]any{status.PatchedAnnotation: string(rec)}},
		"spec": map[string]any{"suspend": false, "paused": true},
	}
	if !reflect.DeepEqual(obj, want) {
		t.Errorf("kept %v,\nwant %v", obj, want)
	}
}
