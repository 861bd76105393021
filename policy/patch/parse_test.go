package patch

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// rules are nsman's, as policy passes them.
var rules = Rules{
	OwnGroup:         "k8s.consol.de",
	AnnotationPrefix: "nsman.k8s.consol.de/",
	Reserved: func(kind string) bool {
		return strings.EqualFold(kind, "Deployment") || strings.EqualFold(kind, "ScaledObject")
	},
}

var path = field.NewPath("spec", "policies").Index(0).Child("action", "params", "patches")

// suspend is the first example: a Flux HelmRelease suspended.
func suspend() map[string]any {
	return map[string]any{"kind": "HelmRelease.helm.toolkit.fluxcd.io", "patch": map[string]any{"spec": map[string]any{"suspend": true}}}
}

// with is item with key set to v (deleted when v is del).
func with(item map[string]any, key string, v any) map[string]any {
	if v == del {
		delete(item, key)
	} else {
		item[key] = v
	}
	return item
}

var del = &struct{}{}

// nested is an object nested depth deep: {a: {a: ... {a: 1}}}.
func nested(depth int) map[string]any {
	m := map[string]any{"a": int64(1)}
	for range depth - 1 {
		m = map[string]any{"a": m}
	}
	return m
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		raw  any
		want []Patch
	}{
		{"none", nil, nil},
		{"an empty list", []any{}, nil},
		{"an annotation's name checked in lower case", []any{with(suspend(), "patch", map[string]any{"metadata": map[string]any{"annotations": map[string]any{"Example.COM/why": "x"}}})},
			[]Patch{{Kind: "HelmRelease", Group: "helm.toolkit.fluxcd.io", Merge: map[string]any{"metadata": map[string]any{"annotations": map[string]any{"Example.COM/why": "x"}}}}}},
		{"a HelmRelease suspended", []any{suspend()}, []Patch{{Kind: "HelmRelease", Group: "helm.toolkit.fluxcd.io", Merge: map[string]any{"spec": map[string]any{"suspend": true}}}}},
		{"labels, and labels and annotations set and removed", []any{
			with(suspend(), "labels", map[string]any{"app.kubernetes.io/part-of": "shop"}),
			map[string]any{"kind": "Kustomization.kustomize.toolkit.fluxcd.io", "patch": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"sleeping": "yes", "gone": nil}, "annotations": map[string]any{"example.com/why": "nights", "example.com/old": nil}},
				"spec":     map[string]any{"suspend": true, "interval": "1h", "list": []any{int64(1), 2.5, nil}},
			}},
		}, []Patch{
			{Kind: "HelmRelease", Group: "helm.toolkit.fluxcd.io", Labels: map[string]string{"app.kubernetes.io/part-of": "shop"}, Merge: map[string]any{"spec": map[string]any{"suspend": true}}},
			{Kind: "Kustomization", Group: "kustomize.toolkit.fluxcd.io", Merge: map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"sleeping": "yes", "gone": nil}, "annotations": map[string]any{"example.com/why": "nights", "example.com/old": nil}},
				"spec":     map[string]any{"suspend": true, "interval": "1h", "list": []any{int64(1), 2.5, nil}},
			}},
		}},
		{"a group of sigs (x-k8s.io is not k8s.io)", []any{with(suspend(), "kind", "Cluster.cluster.x-k8s.io")}, []Patch{{Kind: "Cluster", Group: "cluster.x-k8s.io", Merge: map[string]any{"spec": map[string]any{"suspend": true}}}}},
		{"a group that ends like nsman's", []any{with(suspend(), "kind", "Thing.notk8s.consol.de")}, []Patch{{Kind: "Thing", Group: "notk8s.consol.de", Merge: map[string]any{"spec": map[string]any{"suspend": true}}}}},
		{"nested MaxDepth deep", []any{with(suspend(), "patch", nested(MaxDepth))}, []Patch{{Kind: "HelmRelease", Group: "helm.toolkit.fluxcd.io", Merge: nested(MaxDepth)}}},
		{"MaxPatches", []any{
			suspend(), with(suspend(), "kind", "A.example.com"), with(suspend(), "kind", "B.example.com"), with(suspend(), "kind", "C.example.com"),
			with(suspend(), "kind", "D.example.com"), with(suspend(), "kind", "E.example.com"), with(suspend(), "kind", "F.example.com"), with(suspend(), "kind", "G.example.com"),
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := Parse(tc.raw, path, rules)
			if len(errs) > 0 {
				t.Fatalf("Parse: %v", errs)
			}
			if tc.name == "MaxPatches" {
				if len(got) != MaxPatches {
					t.Fatalf("Parse read %d patches, want %d", len(got), MaxPatches)
				}
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Parse = %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestPatchString(t *testing.T) {
	if got := (Patch{Kind: "HelmRelease", Group: "helm.toolkit.fluxcd.io"}).String(); got != "HelmRelease.helm.toolkit.fluxcd.io" {
		t.Errorf("String = %q", got)
	}
}

// Every refusal is at the field's exact path, of the type it says.
func TestParseRefuses(t *testing.T) {
	p0 := "spec.policies[0].action.params.patches[0]"
	meta := func(m map[string]any) map[string]any { return with(suspend(), "patch", map[string]any{"metadata": m}) }
	for _, tc := range []struct {
		name  string
		raw   any
		field string
		typ   field.ErrorType
		says  string
	}{
		{"not a list", map[string]any{"kind": "HelmRelease.helm.toolkit.fluxcd.io"}, "spec.policies[0].action.params.patches", field.ErrorTypeInvalid, "must be a list"},
		{"more than MaxPatches", make([]any, MaxPatches+1), "spec.policies[0].action.params.patches", field.ErrorTypeTooMany, ""},
		{"an item not an object", []any{"HelmRelease"}, p0, field.ErrorTypeInvalid, "must be an object"},
		{"an item key of its own", []any{with(suspend(), "selector", map[string]any{})}, p0 + ".selector", field.ErrorTypeForbidden, "kind, labels and patch"},
		{"no kind", []any{with(suspend(), "kind", del)}, p0 + ".kind", field.ErrorTypeRequired, ""},
		{"kind a number", []any{with(suspend(), "kind", int64(1))}, p0 + ".kind", field.ErrorTypeInvalid, "must be a string"},
		{"kind without a group", []any{with(suspend(), "kind", "HelmRelease")}, p0 + ".kind", field.ErrorTypeInvalid, "Kind.group"},
		{"kind of a built-in group without a dot", []any{with(suspend(), "kind", "Deployment.apps")}, p0 + ".kind", field.ErrorTypeInvalid, "Kind.group"},
		{"kind of the core group", []any{with(suspend(), "kind", "Service.")}, p0 + ".kind", field.ErrorTypeInvalid, "Kind.group"},
		{"kind starting with a digit", []any{with(suspend(), "kind", "1Release.example.com")}, p0 + ".kind", field.ErrorTypeInvalid, "Kind.group"},
		{"kind's group in upper case", []any{with(suspend(), "kind", "HelmRelease.Helm.toolkit.fluxcd.io")}, p0 + ".kind", field.ErrorTypeInvalid, "Kind.group"},
		{"kind's group over 253 characters", []any{with(suspend(), "kind", "Thing."+strings.Repeat("a.", 127)+"io")}, p0 + ".kind", field.ErrorTypeInvalid, "Kind.group"},
		{"kind of k8s.io", []any{with(suspend(), "kind", "Thing.k8s.io")}, p0 + ".kind", field.ErrorTypeInvalid, "Kubernetes' own"},
		{"kind of *.k8s.io", []any{with(suspend(), "kind", "ClusterRole.rbac.authorization.k8s.io")}, p0 + ".kind", field.ErrorTypeInvalid, "Kubernetes' own"},
		{"kind of nsman's group", []any{with(suspend(), "kind", "NamespaceManager.k8s.consol.de")}, p0 + ".kind", field.ErrorTypeInvalid, "nsman's own"},
		{"kind of a subdomain of nsman's group", []any{with(suspend(), "kind", "Thing.sub.k8s.consol.de")}, p0 + ".kind", field.ErrorTypeInvalid, "nsman's own"},
		{"a kind a sleep takes its own way", []any{with(suspend(), "kind", "ScaledObject.keda.sh")}, p0 + ".kind", field.ErrorTypeInvalid, "select it in selectors"},
		{"a kind a sleep takes its own way, in another case", []any{with(suspend(), "kind", "scaledobject.keda.sh")}, p0 + ".kind", field.ErrorTypeInvalid, "select it in selectors"},
		{"the same kind twice", []any{suspend(), with(suspend(), "kind", "helmrelease.helm.toolkit.fluxcd.io")}, "spec.policies[0].action.params.patches[1].kind", field.ErrorTypeDuplicate, ""},
		{"labels a list", []any{with(suspend(), "labels", []any{"a"})}, p0 + ".labels", field.ErrorTypeInvalid, "map of label names"},
		{"a label a number", []any{with(suspend(), "labels", map[string]any{"tier": int64(1)})}, p0 + ".labels[tier]", field.ErrorTypeInvalid, "must be a string"},
		{"a label name invalid", []any{with(suspend(), "labels", map[string]any{"a b": "x"})}, p0 + ".labels[a b]", field.ErrorTypeInvalid, "label name"},
		{"a label value invalid", []any{with(suspend(), "labels", map[string]any{"tier": "a b"})}, p0 + ".labels[tier]", field.ErrorTypeInvalid, ""},
		{"no patch", []any{with(suspend(), "patch", del)}, p0 + ".patch", field.ErrorTypeRequired, ""},
		{"patch a string", []any{with(suspend(), "patch", `{"spec":{}}`)}, p0 + ".patch", field.ErrorTypeInvalid, "must be an object"},
		{"patch empty", []any{with(suspend(), "patch", map[string]any{})}, p0 + ".patch", field.ErrorTypeRequired, "changes something"},
		{"patch over MaxPatchBytes", []any{with(suspend(), "patch", map[string]any{"spec": map[string]any{"values": strings.Repeat("x", MaxPatchBytes)}})}, p0 + ".patch", field.ErrorTypeInvalid, "at most 2048 bytes"},
		{"patch deeper than MaxDepth", []any{with(suspend(), "patch", nested(MaxDepth+1))}, p0 + ".patch" + strings.Repeat(".a", MaxDepth), field.ErrorTypeForbidden, "nested at most 10 deep"},
		{"patch deeper than MaxDepth in a list", []any{with(suspend(), "patch", map[string]any{"a": []any{nested(MaxDepth - 1)}})}, p0 + ".patch.a[0]" + strings.Repeat(".a", MaxDepth-2), field.ErrorTypeForbidden, "nested at most 10 deep"},
		{"patch of apiVersion", []any{with(suspend(), "patch", map[string]any{"apiVersion": "v2"})}, p0 + ".patch.apiVersion", field.ErrorTypeForbidden, ""},
		{"patch of kind", []any{with(suspend(), "patch", map[string]any{"kind": "Other"})}, p0 + ".patch.kind", field.ErrorTypeForbidden, ""},
		{"patch of status", []any{with(suspend(), "patch", map[string]any{"status": map[string]any{"ready": false}})}, p0 + ".patch.status", field.ErrorTypeForbidden, "status"},
		{"patch of metadata.name", []any{meta(map[string]any{"name": "other"})}, p0 + ".patch.metadata.name", field.ErrorTypeForbidden, "labels and annotations"},
		{"patch of metadata.finalizers", []any{meta(map[string]any{"finalizers": nil})}, p0 + ".patch.metadata.finalizers", field.ErrorTypeForbidden, "labels and annotations"},
		{"patch of metadata null", []any{with(suspend(), "patch", map[string]any{"metadata": nil})}, p0 + ".patch.metadata", field.ErrorTypeInvalid, "must be an object"},
		{"patch of labels null", []any{meta(map[string]any{"labels": nil})}, p0 + ".patch.metadata.labels", field.ErrorTypeInvalid, "object of strings"},
		{"patch of a label a number", []any{meta(map[string]any{"labels": map[string]any{"tier": int64(1)}})}, p0 + ".patch.metadata.labels[tier]", field.ErrorTypeInvalid, "must be a string"},
		{"patch of an annotation an object", []any{meta(map[string]any{"annotations": map[string]any{"a": map[string]any{}}})}, p0 + ".patch.metadata.annotations[a]", field.ErrorTypeInvalid, "must be a string"},
		{"patch of a label value invalid", []any{meta(map[string]any{"labels": map[string]any{"tier": "a b"}})}, p0 + ".patch.metadata.labels[tier]", field.ErrorTypeInvalid, ""},
		{"patch of a label's prefix in upper case", []any{meta(map[string]any{"labels": map[string]any{"Example.COM/why": "x"}})}, p0 + ".patch.metadata.labels[Example.COM/why]", field.ErrorTypeInvalid, ""},
		{"patch of an annotation name invalid", []any{meta(map[string]any{"annotations": map[string]any{"a b": "x"}})}, p0 + ".patch.metadata.annotations[a b]", field.ErrorTypeInvalid, ""},
		{"patch of nsman's annotation", []any{meta(map[string]any{"annotations": map[string]any{"nsman.k8s.consol.de/sleep": nil}})}, p0 + ".patch.metadata.annotations[nsman.k8s.consol.de/sleep]", field.ErrorTypeForbidden, "nsman's own"},
		{"patch of nsman's label, in upper case", []any{meta(map[string]any{"labels": map[string]any{"NSMAN.k8s.consol.de/asleep": "true"}})}, p0 + ".patch.metadata.labels[NSMAN.k8s.consol.de/asleep]", field.ErrorTypeForbidden, "nsman's own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := Parse(tc.raw, path, rules)
			if got != nil {
				t.Errorf("Parse read %v from what it refuses", got)
			}
			if len(errs) == 0 {
				t.Fatal("Parse refused nothing")
			}
			e := errs[0]
			if e.Field != tc.field || e.Type != tc.typ || !strings.Contains(e.Error(), tc.says) {
				t.Errorf("Parse refused %v, want %s at %s saying %q", errs, tc.typ, tc.field, tc.says)
			}
		})
	}
}

// FuzzParse feeds any JSON to Parse, as a manager under the original CRD
// may hold anything: it does not panic, a problem names a field under the
// path, and what it reads is within its bounds.
func FuzzParse(f *testing.F) {
	f.Add(`[{"kind":"HelmRelease.helm.toolkit.fluxcd.io","labels":{"tier":"web"},"patch":{"spec":{"suspend":true},"metadata":{"annotations":{"a.example/b":null}}}}]`)
	f.Add(`[{"kind":"ScaledObject.keda.sh","patch":{"status":{}}},{"kind":1},"x",{"patch":{"metadata":{"name":"n","labels":{"nsman.k8s.consol.de/x":"y"}}}}]`)
	f.Add(`{"kind":"HelmRelease.helm.toolkit.fluxcd.io"}`)
	f.Fuzz(func(t *testing.T, data string) {
		var raw any
		if json.Unmarshal([]byte(data), &raw) != nil {
			return
		}
		patches, errs := Parse(raw, path, rules)
		for _, e := range errs {
			if !strings.HasPrefix(e.Field, path.String()) {
				t.Errorf("a problem outside %s: %v", path, e)
			}
		}
		if len(errs) > 0 && patches != nil {
			t.Errorf("read %v beside problems %v", patches, errs)
		}
		for _, p := range patches {
			data, err := json.Marshal(p.Merge)
			if p.Kind == "" || p.Group == "" || err != nil || len(data) > MaxPatchBytes || len(p.Merge) == 0 || tooDeep(p.Merge, path, 1) != nil {
				t.Errorf("read %s of %s beyond its bounds", data, p)
			}
		}
	})
}
