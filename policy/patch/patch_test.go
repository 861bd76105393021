package patch

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

// apply is obj with merge applied, as the API server applies a merge
// patch (RFC 7396).
func apply(t *testing.T, obj, merge map[string]any) map[string]any {
	t.Helper()
	doc, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	p, err := json.Marshal(merge)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jsonpatch.MergePatch(doc, p)
	if err != nil {
		t.Fatalf("merge %s into %s: %v", p, doc, err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	return got
}

// same reports whether a and b are the same JSON.
func same(t *testing.T, a, b map[string]any) bool {
	t.Helper()
	x, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	var u, v any
	if json.Unmarshal(x, &u) != nil || json.Unmarshal(y, &v) != nil {
		t.Fatal("not JSON")
	}
	return reflect.DeepEqual(u, v)
}

// helmRelease is a Flux HelmRelease as a sweep reads it, decoded as
// unstructured content is (whole numbers int64).
func helmRelease() map[string]any {
	return map[string]any{
		"apiVersion": "helm.toolkit.fluxcd.io/v2",
		"kind":       "HelmRelease",
		"metadata":   map[string]any{"name": "shop", "namespace": "team", "labels": map[string]any{"app": "shop"}},
		"spec": map[string]any{
			"interval": "5m",
			"chart":    map[string]any{"spec": map[string]any{"chart": "shop", "version": "1.2.3"}},
			"values":   map[string]any{"replicas": int64(3), "ratio": 0.5, "hosts": []any{"a.example.com", "b.example.com"}},
		},
		"status": map[string]any{"observedGeneration": int64(4)},
	}
}

func TestInverse(t *testing.T) {
	for _, tc := range []struct {
		name       string
		obj, merge map[string]any
		want       map[string]any
	}{
		{"a field absent: null",
			helmRelease(), map[string]any{"spec": map[string]any{"suspend": true}},
			map[string]any{"spec": map[string]any{"suspend": nil}}},
		{"a field set: its value",
			with(helmRelease(), "spec", map[string]any{"suspend": false}), map[string]any{"spec": map[string]any{"suspend": true}},
			map[string]any{"spec": map[string]any{"suspend": false}}},
		{"a nested map created: null at its top",
			helmRelease(), map[string]any{"spec": map[string]any{"upgrade": map[string]any{"remediation": map[string]any{"retries": int64(0)}}}},
			map[string]any{"spec": map[string]any{"upgrade": nil}}},
		{"a list replaced: the old list",
			helmRelease(), map[string]any{"spec": map[string]any{"values": map[string]any{"hosts": []any{}}}},
			map[string]any{"spec": map[string]any{"values": map[string]any{"hosts": []any{"a.example.com", "b.example.com"}}}}},
		{"null in the patch: the old value",
			helmRelease(), map[string]any{"spec": map[string]any{"values": map[string]any{"ratio": nil}, "chart": nil}},
			map[string]any{"spec": map[string]any{"values": map[string]any{"ratio": 0.5}, "chart": map[string]any{"spec": map[string]any{"chart": "shop", "version": "1.2.3"}}}}},
		{"null in the patch of a field absent: null",
			helmRelease(), map[string]any{"spec": map[string]any{"suspend": nil}},
			map[string]any{"spec": map[string]any{"suspend": nil}}},
		{"an object over a scalar: the scalar",
			helmRelease(), map[string]any{"spec": map[string]any{"interval": map[string]any{"every": "1h"}}},
			map[string]any{"spec": map[string]any{"interval": "5m"}}},
		{"a scalar over an object: the object whole",
			helmRelease(), map[string]any{"spec": map[string]any{"values": "none"}},
			map[string]any{"spec": map[string]any{"values": map[string]any{"replicas": int64(3), "ratio": 0.5, "hosts": []any{"a.example.com", "b.example.com"}}}}},
		{"a label added and one removed",
			helmRelease(), map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": nil, "asleep": "yes"}}},
			map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "shop", "asleep": nil}}}},
		{"annotations created",
			helmRelease(), map[string]any{"metadata": map[string]any{"annotations": map[string]any{"example.com/why": "nights"}}},
			map[string]any{"metadata": map[string]any{"annotations": nil}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Inverse(tc.obj, tc.merge)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Inverse = %#v, want %#v", got, tc.want)
			}
			if back := apply(t, apply(t, tc.obj, tc.merge), got); !same(t, back, tc.obj) {
				t.Errorf("the patch and its inverse give %v, want %v", back, tc.obj)
			}
		})
	}
}

// An inverse shares nothing with the object: a change of one is none of
// the other.
func TestInverseCopies(t *testing.T) {
	obj := helmRelease()
	inv := Inverse(obj, map[string]any{"spec": map[string]any{"values": nil}})
	inv["spec"].(map[string]any)["values"].(map[string]any)["hosts"].([]any)[0] = "changed"
	if host := obj["spec"].(map[string]any)["values"].(map[string]any)["hosts"].([]any)[0]; host != "a.example.com" {
		t.Errorf("changing the inverse changed the object: %v", host)
	}
}

func TestApplied(t *testing.T) {
	suspended := with(helmRelease(), "spec", map[string]any{"suspend": true, "values": map[string]any{"replicas": 3.0, "hosts": []any{"a"}}})
	for _, tc := range []struct {
		name       string
		obj, merge map[string]any
		want       bool
	}{
		{"a field absent", helmRelease(), map[string]any{"spec": map[string]any{"suspend": true}}, false},
		{"the field set so", suspended, map[string]any{"spec": map[string]any{"suspend": true}}, true},
		{"the field set otherwise", suspended, map[string]any{"spec": map[string]any{"suspend": false}}, false},
		{"int64 1 equals float64 1", suspended, map[string]any{"spec": map[string]any{"values": map[string]any{"replicas": int64(3)}}}, true},
		{"3 is not 3.5", suspended, map[string]any{"spec": map[string]any{"values": map[string]any{"replicas": 3.5}}}, false},
		{"3 is not \"3\"", suspended, map[string]any{"spec": map[string]any{"values": map[string]any{"replicas": "3"}}}, false},
		{"the same list", suspended, map[string]any{"spec": map[string]any{"values": map[string]any{"hosts": []any{"a"}}}}, true},
		{"another list", suspended, map[string]any{"spec": map[string]any{"values": map[string]any{"hosts": []any{"a", "b"}}}}, false},
		{"null of a field absent", helmRelease(), map[string]any{"spec": map[string]any{"suspend": nil}}, true},
		{"null of a field present", suspended, map[string]any{"spec": map[string]any{"suspend": nil}}, false},
		{"an object over a scalar", helmRelease(), map[string]any{"spec": map[string]any{"interval": map[string]any{}}}, false},
		{"an object over nothing", helmRelease(), map[string]any{"spec": map[string]any{"upgrade": map[string]any{}}}, false},
		{"an empty object over an object", helmRelease(), map[string]any{"spec": map[string]any{"chart": map[string]any{}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Applied(tc.obj, tc.merge); got != tc.want {
				t.Errorf("Applied = %v, want %v", got, tc.want)
			}
			if changes := !same(t, apply(t, tc.obj, tc.merge), tc.obj); changes == tc.want {
				t.Errorf("Applied = %v, and applying the patch changes the object: %v", tc.want, changes)
			}
		})
	}
}

// Over handmade objects and patches, each pair: the patch is applied
// after it is applied; Applied says whether it changes anything; its
// inverse brings the object back, and is applied to the object.
func TestPatchAndInverse(t *testing.T) {
	objects := []map[string]any{
		{},
		helmRelease(),
		{"spec": map[string]any{"suspend": false, "n": int64(1), "list": []any{map[string]any{"a": int64(1)}}, "o": map[string]any{"x": "y"}}},
		{"spec": "a string", "metadata": map[string]any{"annotations": map[string]any{"example.com/a": "1"}}},
		{"spec": []any{int64(1), int64(2)}, "data": map[string]any{"deep": map[string]any{"deeper": map[string]any{"deepest": true}}}},
	}
	merges := []map[string]any{
		{"spec": map[string]any{"suspend": true}},
		{"spec": map[string]any{"suspend": nil, "n": 1.0}},
		{"spec": map[string]any{"o": map[string]any{"x": nil, "z": map[string]any{"w": int64(2), "gone": nil}}}},
		{"spec": map[string]any{"list": []any{}, "values": map[string]any{"replicas": int64(0)}}},
		{"spec": nil},
		{"spec": "replaced", "data": map[string]any{"deep": map[string]any{"deeper": nil}}},
		{"metadata": map[string]any{"labels": map[string]any{"asleep": "yes"}, "annotations": map[string]any{"example.com/a": nil}}},
		{"data": map[string]any{"deep": map[string]any{"deeper": map[string]any{"deepest": false, "more": []any{nil, "x"}}}}},
	}
	for i, obj := range objects {
		for j, merge := range merges {
			t.Run(fmt.Sprintf("object %d, patch %d", i, j), func(t *testing.T) {
				patched := apply(t, obj, merge)
				if !Applied(patched, merge) {
					t.Errorf("not applied after it is applied: %v", patched)
				}
				if changes := !same(t, patched, obj); Applied(obj, merge) == changes {
					t.Errorf("Applied = %v, and applying the patch changes the object: %v", !changes, changes)
				}
				inv := Inverse(obj, merge)
				if back := apply(t, patched, inv); !same(t, back, obj) {
					t.Errorf("the inverse %v gives %v, want %v", inv, back, obj)
				}
				if !Applied(obj, inv) {
					t.Errorf("the inverse %v is not applied to the object", inv)
				}
			})
		}
	}
}

// hasNull reports whether v holds a null anywhere: a merge patch cannot
// bring one back, since null in a patch removes.
func hasNull(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		for _, x := range v {
			if hasNull(x) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if hasNull(x) {
				return true
			}
		}
	}
	return false
}

// FuzzPatchAndInverse holds Applied and Inverse to RFC 7396 as
// evanphx/json-patch applies it, over any object without nulls and any
// merge patch: applied after it is applied, Applied true exactly when the
// patch changes nothing, and the inverse bringing the object back.
func FuzzPatchAndInverse(f *testing.F) {
	f.Add(`{"spec":{"suspend":false,"n":1,"o":{"x":"y"}}}`, `{"spec":{"suspend":true,"o":{"x":null,"z":{"w":2}}}}`)
	f.Add(`{"spec":"s","list":[1,{"a":2}]}`, `{"spec":{"a":{}},"list":[],"new":null}`)
	f.Add(`{}`, `{"a":{"b":{"c":[null]}}}`)
	f.Fuzz(func(t *testing.T, doc, merge string) {
		var obj, m map[string]any
		if json.Unmarshal([]byte(doc), &obj) != nil || json.Unmarshal([]byte(merge), &m) != nil || obj == nil || m == nil || hasNull(obj) {
			return
		}
		patched := apply(t, obj, m)
		if !Applied(patched, m) {
			t.Errorf("not applied after it is applied: %s onto %s", merge, doc)
		}
		if changes := !same(t, patched, obj); Applied(obj, m) == changes {
			t.Errorf("Applied = %v, and %s changes %s: %v", !changes, merge, doc, changes)
		}
		if back := apply(t, patched, Inverse(obj, m)); !same(t, back, obj) {
			t.Errorf("the inverse of %s onto %s gives %v", merge, doc, back)
		}
	})
}
