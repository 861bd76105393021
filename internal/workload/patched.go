package workload

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/policy/patch"
)

// MaxPatchedRecord bounds the record a patch leaves on an object (the
// patch and the inverse, as JSON): an object whose record would be longer
// is left as it is, as the effect says, rather than patched with a record
// a wake would refuse to read.
const MaxPatchedRecord = 4096

// Patched is the way of the objects a sleep's patch p changes
// (params.patches): asleep, they are as p.Merge makes them; their record
// holds p.Merge and its inverse, which the wake applies while the object
// is still as p made it. Patched(patch.Patch{}) wakes and changes nothing
// asleep: nsman restore's, which knows no policy.
func Patched(p patch.Patch) Way { return patchWay{&p} }

// Whole is a way that reads its objects whole, not as Spec (a patch's,
// which may write any field): a list of them is decoded one object at a
// time, and Keep cuts each to what the way reads.
type Whole interface {
	Way
	// Keep drops, in place, what the way does not read of obj, an object
	// of its kind decoded whole, but the labels keepLabels and the
	// annotations keepAnnotations, which a sleep and a wake read too.
	Keep(obj map[string]any, keepLabels, keepAnnotations []string)
}

// patchWay is the way of the objects of one patch's kind; by pointer, so
// that ways compare (a patch holds maps).
type patchWay struct{ p *patch.Patch }

// patchedRecord is what PatchedAnnotation holds.
type patchedRecord struct {
	Patch   map[string]any `json:"patch"`
	Inverse map[string]any `json:"inverse"`
}

// Sleep applies the patch to w, with the record of what it changes, unless
// w is as the patch makes it already (nothing to do; a record it has is
// kept). A w that carries a record but is no longer as the patch made it
// was changed back by someone: its record becomes the state it was changed
// to, as a workload woken is scaled back with the count it was woken to.
func (pw patchWay) Sleep(id string, w *unstructured.Unstructured, _ policy.SleepTo) (map[string]any, string) {
	if len(pw.p.Merge) == 0 || patch.Applied(w.Object, pw.p.Merge) {
		return nil, ""
	}
	raw, err := json.Marshal(patchedRecord{Patch: pw.p.Merge, Inverse: patch.Inverse(w.Object, pw.p.Merge)})
	if err != nil || len(raw) > MaxPatchedRecord {
		return nil, fmt.Sprintf("leave %s as it is: its record would be %d bytes, more than the %d nsman keeps", id, len(raw), MaxPatchedRecord)
	}
	out := runtime.DeepCopyJSON(pw.p.Merge)
	setRecord(out, string(raw))
	return out, "patch " + id
}

// Wake applies the inverse w's record holds, with the record's removal,
// while w is as the record's patch made it; one changed since keeps its
// state and loses the record.
func (pw patchWay) Wake(id string, w *unstructured.Unstructured) (map[string]any, string, error) {
	rec, ok, err := readPatched(w)
	if !ok || err != nil {
		return nil, "", err
	}
	if !patch.Applied(w.Object, rec.Patch) {
		return map[string]any{"metadata": dropRecord(status.PatchedAnnotation)}, "leave " + id + " as it is: changed since nsman patched it; drop its record", nil
	}
	out := runtime.DeepCopyJSON(rec.Inverse)
	setRecord(out, nil)
	return out, "unpatch " + id, nil
}

// readPatched is w's record, whether it has one, and why it does not read.
func readPatched(w *unstructured.Unstructured) (patchedRecord, bool, error) {
	raw, ok := w.GetAnnotations()[status.PatchedAnnotation]
	if !ok {
		return patchedRecord{}, false, nil
	}
	var rec patchedRecord
	if err := json.Unmarshal([]byte(raw), &rec); err != nil || len(rec.Patch) == 0 {
		return patchedRecord{}, false, fmt.Errorf("%s/%s: annotation %s is not the record of a patch", w.GetKind(), w.GetName(), status.PatchedAnnotation)
	}
	return rec, true, nil
}

// setRecord sets annotation PatchedAnnotation to value (nil: removes it)
// in merge patch out, beside what out sets of the annotations.
func setRecord(out map[string]any, value any) {
	meta, _ := out["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		out["metadata"] = meta
	}
	annotations, _ := meta["annotations"].(map[string]any)
	if annotations == nil {
		annotations = map[string]any{}
		meta["annotations"] = annotations
	}
	annotations[status.PatchedAnnotation] = value
}

// union adds the keys of merge, nested, to paths.
func union(paths, merge map[string]any) {
	for k, v := range merge {
		m, ok := v.(map[string]any)
		if !ok {
			paths[k] = true
			continue
		}
		if sub, ok := paths[k].(map[string]any); ok {
			union(sub, m)
		} else if paths[k] == nil {
			sub := map[string]any{}
			union(sub, m)
			paths[k] = sub
		}
	}
}

// Prune keeps of obj only what paths name (see Paths), in place.
func Prune(obj, paths map[string]any) {
	for k, v := range obj {
		want, ok := paths[k]
		switch sub, nested := want.(map[string]any); {
		case !ok:
			delete(obj, k)
		case nested:
			if m, isMap := v.(map[string]any); isMap {
				Prune(m, sub)
			}
		}
	}
}

// Awake: no object of a patch's kind is read as Spec; probe reads them
// whole, and says there which are awake (not as the patch makes them).
func (patchWay) Awake(*Spec, map[string]string) bool { return false }

// Above: a patch changes no count.
func (patchWay) Above(*Spec, policy.SleepTo) bool { return true }

func (patchWay) Record() string        { return status.PatchedAnnotation }
func (patchWay) Annotations() []string { return []string{status.PatchedAnnotation} }
func (patchWay) Verb() string          { return "patch" }
func (patchWay) FreesPods() bool       { return false }

// FreesLoadBalancer: what a patch frees is not known.
func (patchWay) FreesLoadBalancer() bool { return false }

// RecordBytes: its record holds a patch and its inverse.
func (patchWay) RecordBytes() int { return MaxPatchedRecord }

// AwakeField is the first field the patch sets, in fieldsV1 keys, in the
// order of its keys; spec for restore's, which sets none.
func (pw patchWay) AwakeField() []string {
	path := []string{}
	for m := patchMerge(pw.p); m != nil; {
		keys := slices.Sorted(maps.Keys(m))
		if len(keys) == 0 {
			break
		}
		path = append(path, "f:"+keys[0])
		m, _ = m[keys[0]].(map[string]any)
	}
	if len(path) == 0 {
		return []string{"f:spec"}
	}
	return path
}

func (pw patchWay) Doc() Doc {
	return Doc{
		Kinds:  "the kind of each of `patches`, its objects the labels pick",
		Asleep: "as the patch makes it (a JSON merge patch: `{spec: {suspend: true}}`)",
		Record: "`" + status.PatchedAnnotation + "`: the patch and its inverse, as JSON",
		Woken:  "the inverse applied, while the object is still as the patch made it; one changed since is left as it is",
	}
}

// Keep keeps of obj the fields the patch sets and those its record's
// patch set, the name, namespace and version, and of the labels and
// annotations those asked for beside the patches' and the record.
func (pw patchWay) Keep(obj map[string]any, keepLabels, keepAnnotations []string) {
	recorded, _, _ := unstructured.NestedString(obj, "metadata", "annotations", status.PatchedAnnotation)
	paths := map[string]any{"apiVersion": true, "kind": true}
	if pw.p != nil {
		union(paths, pw.p.Merge)
	}
	var rec patchedRecord
	if recorded != "" && json.Unmarshal([]byte(recorded), &rec) == nil {
		union(paths, rec.Patch)
	}
	meta := map[string]any{"name": true, "namespace": true, "resourceVersion": true, "labels": map[string]any{}, "annotations": map[string]any{}}
	for _, l := range keepLabels {
		meta["labels"].(map[string]any)[l] = true
	}
	for _, a := range append(keepAnnotations, status.PatchedAnnotation) {
		meta["annotations"].(map[string]any)[a] = true
	}
	union(meta, asMap(paths["metadata"]))
	paths["metadata"] = meta
	Prune(obj, paths)
}

// asMap is v as a map, nil when it is none.
func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// patchMerge is p's merge patch, nil for none.
func patchMerge(p *patch.Patch) map[string]any {
	if p == nil {
		return nil
	}
	return p.Merge
}
