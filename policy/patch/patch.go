package patch

import (
	"math"
	"slices"
	"strings"
)

// Patch is one of a sleep's patches (params.patches of SLEEP and SCALE_DOWN).
type Patch struct {
	Kind   string            // the kind's name as written: HelmRelease
	Group  string            // its API group: helm.toolkit.fluxcd.io
	Labels map[string]string // the labels its objects must carry; none: every object of the kind in the namespace
	Merge  map[string]any    // the JSON merge patch (RFC 7396), as the manager has it (unstructured: int64, float64, string, bool, nil, []any, map[string]any)
}

// String is the kind as kubectl names it: HelmRelease.helm.toolkit.fluxcd.io.
func (p Patch) String() string { return p.Kind + "." + p.Group }

// Custom reports whether group is a custom resources' group, whose kinds a
// patch may name: one with a dot, not Kubernetes' own (k8s.io and its
// subdomains).
func Custom(group string) bool {
	return strings.Contains(group, ".") && group != "k8s.io" && !strings.HasSuffix(group, ".k8s.io")
}

// Applied reports whether obj (an object's unstructured content) is already
// what merge makes of it: applying merge would change nothing, so that a
// sleep that finds it so neither writes nor records an inverse over the
// one it recorded. Values compare as JSON (int64 1 equals float64 1).
func Applied(obj, merge map[string]any) bool {
	for k, v := range merge {
		have, ok := obj[k]
		switch v := v.(type) {
		case nil:
			// null removes the field: applied when there is none.
			if ok {
				return false
			}
		case map[string]any:
			// An object merges into an object; anything else it replaces
			// with an object, which is a change.
			m, isMap := have.(map[string]any)
			if !ok || !isMap || !Applied(m, v) {
				return false
			}
		default:
			if !ok || !equal(have, v) {
				return false
			}
		}
	}
	return true
}

// Inverse is the merge patch that brings obj back from what merge makes of
// it: for each field merge sets or removes, obj's value there (a deep
// copy), or nil (JSON null: remove) where obj has none; where merge has an
// object and obj an object, recursively; where obj has something else (or
// nothing), obj's value whole (or nil). It is computed from the object as
// read before the patch, and recorded on it, so that the wake restores
// what was there rather than what nsman assumes.
func Inverse(obj, merge map[string]any) map[string]any {
	inv := make(map[string]any, len(merge))
	for k, v := range merge {
		have, ok := obj[k]
		sub, isMap := v.(map[string]any)
		was, wasMap := have.(map[string]any)
		switch {
		case isMap && wasMap:
			inv[k] = Inverse(was, sub)
		case ok:
			inv[k] = deepCopy(have)
		default:
			inv[k] = nil
		}
	}
	return inv
}

// deepCopy copies v's objects and lists, so that an inverse shares nothing
// with the object it was computed from.
func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = deepCopy(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = deepCopy(x)
		}
		return out
	}
	return v
}

// equal reports whether a and b are the same JSON value: numbers by their
// value whatever their Go type (a manager decoded from YAML has int64
// where an object read from the API server may have float64), objects and
// lists element by element.
func equal(a, b any) bool {
	if x, ok := number(a); ok {
		y, ok := number(b)
		return ok && x == y
	}
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, x := range a {
			if y, ok := b[k]; !ok || !equal(x, y) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		return ok && slices.EqualFunc(a, b, equal)
	case nil:
		return b == nil
	case string, bool:
		return a == b
	}
	return false
}

// num is a JSON number: a whole one as int64, so that large ones compare
// exactly, any other as float64.
type num struct {
	whole int64
	frac  float64
	isInt bool
}

// number is v as a num, false when v is no number.
func number(v any) (num, bool) {
	switch v := v.(type) {
	case int64:
		return num{whole: v, isInt: true}, true
	case int:
		return num{whole: int64(v), isInt: true}, true
	case int32:
		return num{whole: int64(v), isInt: true}, true
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<63 {
			return num{whole: int64(v), isInt: true}, true
		}
		return num{frac: v}, true
	}
	return num{}, false
}
