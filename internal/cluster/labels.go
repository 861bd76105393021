package cluster

import (
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
)

// nameLabel is the label the API server sets on every namespace, to its
// name.
const nameLabel = "kubernetes.io/metadata.name"

// PackedLabels holds a namespace's labels for rules to select by, in one
// string of "name\x00value\x00" pairs, nameLabel left out when it holds the
// namespace's name: a sweep keeps the labels of every namespace, and at
// 10,000 namespaces a map each raised a sweep's peak RSS by a sixth
// (BENCHMARKS.md). Label names and values cannot contain NUL.
type PackedLabels struct {
	Packed string
	// name is the namespace's name when nameLabel holds it.
	name string
}

func PackLabels(name string, set map[string]string) PackedLabels {
	var b strings.Builder
	var l PackedLabels
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if k == nameLabel && name != "" && set[k] == name {
			l.name = name
			continue
		}
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(set[k])
		b.WriteByte(0)
	}
	l.Packed = b.String()
	return l
}

var _ labels.Labels = PackedLabels{}

// Lookup returns the value of label and whether the namespace has it.
func (l PackedLabels) Lookup(label string) (string, bool) {
	if label == nameLabel && l.name != "" {
		return l.name, true
	}
	for rest := l.Packed; rest != ""; {
		k, after, _ := strings.Cut(rest, "\x00")
		v, after, _ := strings.Cut(after, "\x00")
		if k == label {
			return v, true
		}
		rest = after
	}
	return "", false
}

// Has reports whether the namespace has label.
func (l PackedLabels) Has(label string) bool {
	_, ok := l.Lookup(label)
	return ok
}

// Get returns the value of label, empty when the namespace has none.
func (l PackedLabels) Get(label string) string {
	v, _ := l.Lookup(label)
	return v
}
