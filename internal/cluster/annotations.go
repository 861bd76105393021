package cluster

import (
	"cmp"
	"maps"
	"slices"
)

// Annotation is one annotation of a namespace.
type Annotation struct{ Key, Value string }

// Annotations are the few annotations of one kind a sweep keeps of a
// namespace (its rules' records, its owner markers), in a slice sorted by
// key rather than a map: a map of one or two costs some 300 bytes, a pair
// here 32 (BenchmarkNamespaceOfKept: a namespace with a rule's record and
// an owner marker kept 912 bytes as two maps, 336 as two slices).
type Annotations []Annotation

// AnnotationsOf is m's annotations, sorted by key; nil for none.
func AnnotationsOf(m map[string]string) Annotations {
	var a Annotations
	for _, k := range slices.Sorted(maps.Keys(m)) {
		a = append(a, Annotation{Key: k, Value: m[k]})
	}
	return a
}

// Get returns the value of annotation key, and whether a has it.
func (a Annotations) Get(key string) (string, bool) {
	if i, ok := slices.BinarySearchFunc(a, key, func(x Annotation, key string) int { return cmp.Compare(x.Key, key) }); ok {
		return a[i].Value, true
	}
	return "", false
}

// Value is the value of annotation key, "" when a does not have it.
func (a Annotations) Value(key string) string {
	v, _ := a.Get(key)
	return v
}

// Map is a as a map; nil for none.
func (a Annotations) Map() map[string]string {
	if len(a) == 0 {
		return nil
	}
	m := make(map[string]string, len(a))
	for _, x := range a {
		m[x.Key] = x.Value
	}
	return m
}

// with is a with annotation key set to value, kept sorted.
func (a Annotations) with(key, value string) Annotations {
	i, ok := slices.BinarySearchFunc(a, key, func(x Annotation, key string) int { return cmp.Compare(x.Key, key) })
	if ok {
		a[i].Value = value
		return a
	}
	return slices.Insert(a, i, Annotation{Key: key, Value: value})
}
