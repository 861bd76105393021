package patch

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Bounds of params.patches: a manager's patches are written at each
// sleep and recorded, inverted, on each object they change, whose
// annotations are bounded too.
const (
	MaxPatches    = 8    // entries of params.patches
	MaxPatchBytes = 2048 // a patch's merge patch, as JSON
	MaxDepth      = 10   // nesting of a merge patch
)

// maxLabels bounds a patch's labels, as the CRD bounds a selector's.
const maxLabels = 64

// Rules is what Parse refuses beside the shape: nsman's own API group, its
// annotation prefix, and the kinds a sleep takes its own way.
type Rules struct {
	OwnGroup         string                 // policy.Group: no kind of it
	AnnotationPrefix string                 // "nsman.k8s.consol.de/": no label or annotation key of it in a patch
	Reserved         func(kind string) bool // a kind a sleep takes its own way (policy.KnownKinds, any case): refused, "select it"
}

// kindName is a patch's kind: a kind's name and a custom resource's API
// group, which has a dot (a built-in group such as apps has none). The
// CRD checks the same expression.
var kindName = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9]{0,62})\.([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+)$`)

// Parse reads params.patches (raw as decoded: []any of map[string]any;
// nil: none) at path, reporting every problem at its field's path.
func Parse(raw any, path *field.Path, r Rules) ([]Patch, field.ErrorList) {
	if raw == nil {
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, field.ErrorList{field.Invalid(path, raw, "must be a list")}
	}
	if len(list) > MaxPatches {
		return nil, field.ErrorList{field.TooMany(path, len(list), MaxPatches)}
	}
	var errs field.ErrorList
	out := make([]Patch, 0, len(list))
	for i, item := range list {
		ip := path.Index(i)
		obj, ok := item.(map[string]any)
		if !ok {
			errs = append(errs, field.Invalid(ip, item, "must be an object"))
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			if k != "kind" && k != "labels" && k != "patch" {
				errs = append(errs, field.Forbidden(ip.Child(k), "a patch has kind, labels and patch, nothing else"))
			}
		}
		p, kindErrs := kind(obj["kind"], ip.Child("kind"), r)
		errs = append(errs, kindErrs...)
		if p.Kind != "" && slices.ContainsFunc(out, func(q Patch) bool { return strings.EqualFold(q.String(), p.String()) }) {
			errs = append(errs, field.Duplicate(ip.Child("kind"), p.String()))
		}
		var more field.ErrorList
		p.Labels, more = labels(obj["labels"], ip.Child("labels"))
		errs = append(errs, more...)
		p.Merge, more = merge(obj["patch"], ip.Child("patch"), r.AnnotationPrefix)
		errs = append(errs, more...)
		out = append(out, p)
	}
	if len(errs) > 0 || len(out) == 0 {
		return nil, errs
	}
	return out, nil
}

// kind reads a patch's kind at kp into a Patch's Kind and Group: a custom
// resource's, as nsman may write it. Kubernetes' own APIs are refused (a
// sleep of their workloads is a selector's; patching the rest, RBAC or
// webhooks, is no sleep), nsman's own (its managers are its records), and
// the kinds a sleep takes its own way.
func kind(raw any, kp *field.Path, r Rules) (Patch, field.ErrorList) {
	s, ok := raw.(string)
	switch {
	case raw == nil:
		return Patch{}, field.ErrorList{field.Required(kp, "a custom resource's Kind.group, such as HelmRelease.helm.toolkit.fluxcd.io")}
	case !ok:
		return Patch{}, field.ErrorList{field.Invalid(kp, raw, "must be a string")}
	}
	m := kindName.FindStringSubmatch(s)
	if m == nil || len(m[2]) > validation.DNS1123SubdomainMaxLength {
		return Patch{}, field.ErrorList{field.Invalid(kp, s, "must be Kind.group with the API group of a custom resource (a DNS subdomain with a dot), such as HelmRelease.helm.toolkit.fluxcd.io")}
	}
	p := Patch{Kind: m[1], Group: m[2]}
	switch {
	case !Custom(p.Group):
		return Patch{}, field.ErrorList{field.Invalid(kp, s, "is a kind of Kubernetes' own APIs (*.k8s.io), which nsman does not patch")}
	case r.OwnGroup != "" && (p.Group == r.OwnGroup || strings.HasSuffix(p.Group, "."+r.OwnGroup)):
		return Patch{}, field.ErrorList{field.Invalid(kp, s, "is a kind of nsman's own API group "+r.OwnGroup+", which a sleep does not patch")}
	case r.Reserved != nil && r.Reserved(p.Kind):
		return Patch{}, field.ErrorList{field.Invalid(kp, s, p.Kind+" sleeps its own way: select it in selectors")}
	}
	return p, nil
}

// labels reads a patch's labels at lp: label names to label values, both
// as the API server validates them.
func labels(raw any, lp *field.Path) (map[string]string, field.ErrorList) {
	if raw == nil {
		return nil, nil
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil, field.ErrorList{field.Invalid(lp, raw, "must be a map of label names to values")}
	}
	if len(obj) > maxLabels {
		return nil, field.ErrorList{field.TooMany(lp, len(obj), maxLabels)}
	}
	var errs field.ErrorList
	out := make(map[string]string, len(obj))
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		kp := lp.Key(k)
		v, ok := obj[k].(string)
		if !ok {
			errs = append(errs, field.Invalid(kp, obj[k], "must be a string"))
			continue
		}
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(kp, k, "label name: "+msg))
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			errs = append(errs, field.Invalid(kp, v, msg))
		}
		out[k] = v
	}
	return out, errs
}

// merge reads a patch's merge patch at pp: an object, bounded in bytes
// and nesting, that writes neither an object's identity (apiVersion, kind,
// metadata but its labels and annotations) nor its status (which its
// controller owns and a merge patch through the main resource does not
// reach), nor a label or annotation of nsman's (under prefix: its
// records, which a patch would forge).
func merge(raw any, pp *field.Path, prefix string) (map[string]any, field.ErrorList) {
	obj, ok := raw.(map[string]any)
	switch {
	case raw == nil:
		return nil, field.ErrorList{field.Required(pp, "a JSON merge patch, such as {spec: {suspend: true}}")}
	case !ok:
		return nil, field.ErrorList{field.Invalid(pp, raw, "must be an object: a JSON merge patch")}
	case len(obj) == 0:
		return nil, field.ErrorList{field.Required(pp, "a JSON merge patch that changes something, such as {spec: {suspend: true}}")}
	}
	data, err := json.Marshal(obj)
	switch {
	case err != nil:
		return nil, field.ErrorList{field.Invalid(pp, raw, "must be JSON: "+err.Error())}
	case len(data) > MaxPatchBytes:
		return nil, field.ErrorList{field.Invalid(pp, raw, fmt.Sprintf("must be at most %d bytes as JSON, not %d", MaxPatchBytes, len(data)))}
	}
	if deep := tooDeep(obj, pp, 1); deep != nil {
		return nil, field.ErrorList{field.Forbidden(deep, fmt.Sprintf("nests too deep: a merge patch is nested at most %d deep", MaxDepth))}
	}
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		switch k {
		case "apiVersion", "kind":
			errs = append(errs, field.Forbidden(pp.Child(k), "a patch may not change what an object is"))
		case "status":
			errs = append(errs, field.Forbidden(pp.Child(k), "a patch may not write an object's status, which its controller owns"))
		case "metadata":
			errs = append(errs, metadata(obj[k], pp.Child(k), prefix)...)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return obj, nil
}

// tooDeep is the path of the first object or list in v nested more than
// MaxDepth deep (v itself at depth), nil when none is.
func tooDeep(v any, path *field.Path, depth int) *field.Path {
	switch v := v.(type) {
	case map[string]any:
		if depth > MaxDepth {
			return path
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if deep := tooDeep(v[k], path.Child(k), depth+1); deep != nil {
				return deep
			}
		}
	case []any:
		if depth > MaxDepth {
			return path
		}
		for i, x := range v {
			if deep := tooDeep(x, path.Index(i), depth+1); deep != nil {
				return deep
			}
		}
	}
	return nil
}

// metadata checks a patch's metadata at mp: labels and annotations only,
// each an object of strings (set) or nulls (removed), none of nsman's.
func metadata(raw any, mp *field.Path, prefix string) field.ErrorList {
	obj, ok := raw.(map[string]any)
	if !ok {
		return field.ErrorList{field.Invalid(mp, raw, "must be an object of labels and annotations")}
	}
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		kp := mp.Child(k)
		if k != "labels" && k != "annotations" {
			errs = append(errs, field.Forbidden(kp, "a patch may change an object's labels and annotations, no other metadata"))
			continue
		}
		m, ok := obj[k].(map[string]any)
		if !ok {
			errs = append(errs, field.Invalid(kp, obj[k], "must be an object of strings, or nulls to remove"))
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(m)) {
			errs = append(errs, metadataKey(k, name, m[name], kp.Key(name), prefix)...)
		}
	}
	return errs
}

// metadataKey checks one label or annotation (of what, "labels" or
// "annotations") a patch sets to v, or removes.
func metadataKey(what, name string, v any, kp *field.Path, prefix string) field.ErrorList {
	s, isString := v.(string)
	var errs field.ErrorList
	switch {
	case v != nil && !isString:
		errs = append(errs, field.Invalid(kp, v, "must be a string, or null to remove it"))
	case prefix != "" && strings.HasPrefix(strings.ToLower(name), prefix):
		errs = append(errs, field.Forbidden(kp, "is nsman's own ("+prefix+"*): a patch may not write or remove nsman's records"))
	}
	// The API server checks an annotation's name in lower case, a label's
	// as it is.
	key := name
	if what == "annotations" {
		key = strings.ToLower(name)
	}
	for _, msg := range validation.IsQualifiedName(key) {
		errs = append(errs, field.Invalid(kp, name, msg))
	}
	if what == "labels" && isString {
		for _, msg := range validation.IsValidLabelValue(s) {
			errs = append(errs, field.Invalid(kp, s, msg))
		}
	}
	return errs
}
