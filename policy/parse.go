package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nsman/nsman/policy/traffic"
	"github.com/nsman/nsman/policy/warn"
	"github.com/nsman/nsman/policy/window"
)

// policyName is the original CRD's pattern for policy names.
var policyName = regexp.MustCompile(`^\w[\w ]{1,90}\w$`)

// Parse reads a NamespaceManager and validates it, reporting every problem at
// once, each with its field path. It never trusts the stored object: the
// original CRD checks little, so any field may be missing, of the wrong type
// or out of range. Unknown fields are ignored. The Manager is only meaningful
// when the list is empty.
func Parse(obj *unstructured.Unstructured) (Manager, field.ErrorList) {
	return parse(obj, false)
}

// ParseStrict is Parse, refusing also what nsman's CRD refuses at
// admission beyond it (nsman validate checks a manifest so): the bounds
// that keep the CRD's rules' cost estimable (64 policies, 16 SCALE_DOWN
// or SLEEP selectors, 64 labels in a map, a url of 2048 characters), every
// parameter the CRD declares whatever the condition or action type, and
// label values that are strings. A sweep uses Parse: under the original
// CRD, which checks none of this, such a manager still works.
func ParseStrict(obj *unstructured.Unstructured) (Manager, field.ErrorList) {
	return parse(obj, true)
}

func parse(obj *unstructured.Unstructured, strict bool) (Manager, field.ErrorList) {
	m := Manager{
		Namespace:  obj.GetNamespace(),
		Name:       obj.GetName(),
		UID:        types.UID(obj.GetUID()),
		Generation: obj.GetGeneration(), NotifyChannel: obj.GetAnnotations()["nsman.k8s.consol.de/notify-channel"],
	}
	var errs field.ErrorList
	if kind := obj.GetKind(); kind != "" && kind != Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), kind, "must be "+Kind))
	}
	specPath := field.NewPath("spec")
	raw, ok := obj.Object["spec"]
	if !ok || raw == nil {
		return m, bounded(append(errs, field.Required(specPath, "")))
	}
	spec, ok := raw.(map[string]any)
	if !ok {
		return m, bounded(append(errs, field.Invalid(specPath, raw, "must be an object")))
	}
	p := parser{strict: strict}
	m.Arming = arming(spec)
	m.Deactivated = p.boolean(spec, "deactivated", specPath)
	m.TargetNamespace = p.str(spec, "namespace", specPath)
	m.Rule = p.rule(spec, specPath)
	if enforce := p.boolean(spec, "enforce", specPath); m.Rule != nil {
		m.Rule.Enforce = enforce
	} else if spec["enforce"] != nil {
		p.errs = append(p.errs, field.Forbidden(specPath.Child("enforce"), "only a rule (namespaceSelector or namePatterns) enforces; a manager of one namespace governs it anyway"))
	}
	switch {
	case m.Rule != nil:
		if m.TargetNamespace != "" {
			p.errs = append(p.errs, field.Forbidden(specPath.Child("namespace"), "a rule (namespaceSelector or namePatterns) acts on the namespaces it matches; it cannot also name one"))
		}
	case m.TargetNamespace != "":
		for _, msg := range validation.IsDNS1123Label(m.TargetNamespace) {
			p.errs = append(p.errs, field.Invalid(specPath.Child("namespace"), m.TargetNamespace, msg))
		}
	case m.Name != "":
		// The manager's name doubles as its target.
		for _, msg := range validation.IsDNS1123Label(m.Name) {
			p.errs = append(p.errs, field.Invalid(field.NewPath("metadata", "name"), m.Name, "names the target namespace when spec.namespace is empty: "+msg))
		}
	}
	m.Policies = p.policies(spec, specPath)
	return m, bounded(append(errs, p.errs...))
}

// arming hashes spec without spec.deactivated and spec.enforce, which
// change whether and where a rule acts, not what it does (encoding/json
// sorts map keys, so equal specs hash equally).
func arming(spec map[string]any) string {
	rest := make(map[string]any, len(spec))
	for k, v := range spec {
		if k != "deactivated" && k != "enforce" {
			rest[k] = v
		}
	}
	data, err := json.Marshal(rest)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:12])
}

// Bounds of what a problem repeats of the manifest: a manager may hold
// anything up to etcd's object size, and its problems end up in reports,
// logs, status and Events.
const (
	maxShownValue = 64
	maxShownField = 256
	maxShownText  = 256
)

// bounded cuts every problem's field path, value and detail to a readable
// size, and shows objects and lists by their size rather than in full.
func bounded(errs field.ErrorList) field.ErrorList {
	for _, e := range errs {
		e.Field = cut(e.Field, maxShownField)
		e.Detail = cut(e.Detail, maxShownText)
		switch v := e.BadValue.(type) {
		case string:
			e.BadValue = cut(v, maxShownValue)
		case map[string]any:
			e.BadValue = fmt.Sprintf("<an object of %d fields>", len(v))
		case []any:
			e.BadValue = fmt.Sprintf("<a list of %d items>", len(v))
		}
	}
	return errs
}

// cut shortens s to at most n bytes, on a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n - len("…")
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// parser accumulates field errors while reading loosely typed values.
type parser struct {
	errs field.ErrorList
	// strict refuses also what nsman's CRD refuses (see ParseStrict).
	strict bool
}

// Bounds of nsman's CRD that Parse does not hold a manager to (see
// ParseStrict).
const (
	maxPolicies  = 64
	maxSelectors = 16
	maxLabels    = 64
	maxURLLength = 2048
)

// tooMany reports a list or map of n items above max, under strict.
func (p *parser) tooMany(path *field.Path, n, max int) {
	if p.strict && n > max {
		p.errs = append(p.errs, field.TooMany(path, n, max))
	}
}

// Bounds of a rule's matchers, as nsman's CRD sets them.
const (
	maxPatterns      = 64
	maxPatternLength = 253
)

// rule reads spec.namespaceSelector and spec.namePatterns; nil when neither
// is there, which makes the manager a single-target one.
func (p *parser) rule(spec map[string]any, specPath *field.Path) *Rule {
	rawSel, hasSel := spec["namespaceSelector"]
	rawPat, hasPat := spec["namePatterns"]
	hasSel, hasPat = hasSel && rawSel != nil, hasPat && rawPat != nil
	if !hasSel && !hasPat {
		return nil
	}
	r := &Rule{}
	if hasSel {
		r.Selector = p.namespaceSelector(rawSel, specPath.Child("namespaceSelector"))
	}
	if hasPat {
		r.Patterns = p.namePatterns(rawPat, specPath.Child("namePatterns"))
	}
	return r
}

// namespaceSelector reads a rule's spec.namespaceSelector, raw, at sp; nil
// when it is not a valid selector that names something (reported).
func (p *parser) namespaceSelector(raw any, sp *field.Path) labels.Selector {
	obj, ok := raw.(map[string]any)
	var ls metav1.LabelSelector
	switch err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj, &ls, true); {
	case !ok:
		p.errs = append(p.errs, field.Invalid(sp, raw, "must be a label selector: matchLabels and/or matchExpressions"))
	case err != nil:
		p.errs = append(p.errs, field.Invalid(sp, raw, "must be a label selector: "+err.Error()))
	case len(ls.MatchLabels) == 0 && len(ls.MatchExpressions) == 0:
		// Such a selector matches every namespace, and is what the API
		// server leaves of one whose only field it pruned (a typo).
		p.errs = append(p.errs, field.Required(sp, `matchLabels or matchExpressions: an empty selector would match every namespace (namePatterns: ["*"] says so, if that is meant)`))
	default:
		if errs := metav1validation.ValidateLabelSelector(&ls, metav1validation.LabelSelectorValidationOptions{}, sp); len(errs) > 0 {
			p.errs = append(p.errs, errs...)
			return nil
		}
		sel, err := metav1.LabelSelectorAsSelector(&ls)
		if err != nil {
			p.errs = append(p.errs, field.Invalid(sp, raw, err.Error()))
			return nil
		}
		return sel
	}
	return nil
}

// namePatterns reads a rule's spec.namePatterns, raw, at pp: the patterns
// that are valid, the others reported; none of a list over maxPatterns,
// which is reported whole.
func (p *parser) namePatterns(raw any, pp *field.Path) []string {
	list, ok := raw.([]any)
	switch {
	case !ok:
		p.errs = append(p.errs, field.Invalid(pp, raw, "must be a list of name patterns"))
	case len(list) == 0:
		p.errs = append(p.errs, field.Required(pp, "at least one pattern, or leave namePatterns out"))
	case len(list) > maxPatterns:
		p.errs = append(p.errs, field.TooMany(pp, len(list), maxPatterns))
	}
	if len(list) > maxPatterns {
		list = nil
	}
	var patterns []string
	for i, item := range list {
		ip := pp.Index(i)
		pat, ok := item.(string)
		switch {
		case !ok:
			p.errs = append(p.errs, field.Invalid(ip, item, "must be a string"))
		case pat == "":
			p.errs = append(p.errs, field.Required(ip, "a shell-style pattern such as e2e-*"))
		case len(pat) > maxPatternLength:
			p.errs = append(p.errs, field.TooLong(ip, pat, maxPatternLength))
		case !validPattern(pat):
			p.errs = append(p.errs, field.Invalid(ip, pat, "must be a shell-style pattern (path.Match syntax: *, ?, [a-z], \\ escapes); a [ is not closed or a \\ ends it"))
		default:
			patterns = append(patterns, pat)
		}
	}
	return patterns
}

// validPattern reports whether pat is well-formed path.Match syntax;
// path.Match checks the whole pattern whatever the name.
func validPattern(pat string) bool {
	_, err := path.Match(pat, "")
	return err == nil
}

func (p *parser) policies(spec map[string]any, specPath *field.Path) []Policy {
	path := specPath.Child("policies")
	raw, ok := spec["policies"]
	if !ok || raw == nil {
		p.errs = append(p.errs, field.Required(path, "at least one policy"))
		return nil
	}
	list, ok := raw.([]any)
	if !ok {
		p.errs = append(p.errs, field.Invalid(path, raw, "must be a list"))
		return nil
	}
	if len(list) == 0 {
		p.errs = append(p.errs, field.Required(path, "at least one policy"))
		return nil
	}
	p.tooMany(path, len(list), maxPolicies)
	seen := map[string]bool{}
	policies := make([]Policy, 0, len(list))
	for i, item := range list {
		ip := path.Index(i)
		obj, ok := item.(map[string]any)
		if !ok {
			p.errs = append(p.errs, field.Invalid(ip, item, "must be an object"))
			continue
		}
		pol := Policy{Raw: obj, Final: true}
		if _, set := obj["final"]; set && obj["final"] != nil {
			pol.Final = p.boolean(obj, "final", ip)
		}
		namePath := ip.Child("name")
		switch pol.Name = p.str(obj, "name", ip); {
		case pol.Name == "":
			if _, isString := obj["name"].(string); isString || obj["name"] == nil {
				p.errs = append(p.errs, field.Required(namePath, ""))
			}
		case !policyName.MatchString(pol.Name):
			p.errs = append(p.errs, field.Invalid(namePath, pol.Name, "must match "+policyName.String()))
		case seen[pol.Name]:
			p.errs = append(p.errs, field.Duplicate(namePath, pol.Name))
		}
		seen[pol.Name] = true
		pol.Condition = p.condition(p.object(obj, "condition", ip, true), ip.Child("condition"))
		pol.Action = p.action(p.object(obj, "action", ip, true), ip.Child("action"))
		windows, errs := window.Parse(obj["windows"], ip.Child("windows"), p.strict)
		before, warnErrs := warn.Parse(obj["warnBefore"], ip.Child("warnBefore"))
		pol.Windows, pol.WarnBefore, p.errs = windows, before, append(append(p.errs, errs...), warnErrs...)
		if e := pol.Condition.Evidence(); len(pol.WarnBefore) > 0 && (e.Pods != NoPods || e.Owner) {
			p.errs = append(p.errs, field.Forbidden(ip.Child("warnBefore"), "a "+pol.Condition.Type+" condition has no due time to warn before"))
		}
		if never := pol.Action.Kind().NeverFinal(); never != "" {
			if explicit, _ := obj["final"].(bool); explicit {
				p.errs = append(p.errs, field.Invalid(ip.Child("final"), true, "a "+pol.Action.Type+" policy is never final: "+never))
			}
			pol.Final = false
		}
		policies = append(policies, pol)
	}
	return policies
}

func (p *parser) condition(obj map[string]any, path *field.Path) Condition {
	if obj == nil {
		return Condition{}
	}
	typ, wrongType := p.optionalStr(obj, "type", path)
	params := p.object(obj, "params", path, false)
	pp := path.Child("params")
	t, known := LookupCondition(typ)
	c := Condition{Type: typ}
	switch {
	case known:
		var errs field.ErrorList
		c, errs = t.parse(params, pp, p.strict)
		c.Type = typ
		p.errs = append(p.errs, errs...)
	case typ == "":
		if !wrongType {
			p.errs = append(p.errs, field.Required(path.Child("type"), ""))
		}
	default:
		p.errs = append(p.errs, field.NotSupported(path.Child("type"), typ, conditionNames()))
	}
	if p.strict {
		// The CRD checks every parameter it declares, used or not.
		var used []Param
		if known {
			used = t.Params()
		}
		for _, prm := range AllParams() {
			if !slices.ContainsFunc(used, func(u Param) bool { return u.Key == prm.Key }) {
				p.checkParam(params, pp, prm)
			}
		}
	}
	return c
}

// traffic is params[key], a traffic source; nil when absent.
func (p *parser) traffic(params map[string]any, key string, pp *field.Path) *traffic.Source {
	obj := p.object(params, key, pp, false)
	if obj == nil {
		return nil
	}
	s, problem := traffic.Read(obj)
	if problem != "" {
		p.errs = append(p.errs, field.Invalid(pp.Child(key), cut(s.Preset+s.Query, 64), problem))
		return nil
	}
	return &s
}

// instant is params[key], an RFC 3339 time; zero when absent.
func (p *parser) instant(params map[string]any, key string, pp *field.Path) time.Time {
	raw, wrongType := p.optionalStr(params, key, pp)
	if raw == "" || wrongType {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339, raw)
	if err != nil {
		p.errs = append(p.errs, field.Invalid(pp.Child(key), raw, "must be an RFC 3339 time, e.g. 2026-12-01T18:00:00Z"))
		return time.Time{}
	}
	return t
}

func (p *parser) action(obj map[string]any, path *field.Path) Action {
	if obj == nil {
		return Action{}
	}
	typ, wrongType := p.optionalStr(obj, "type", path)
	return p.readAction(Action{Type: typ}, wrongType, p.object(obj, "params", path, false), path)
}

// ScaleKindName is what a selector's kind must look like when it is none of
// KnownKinds: a kind's name, alone or followed by its API group (as kubectl
// writes Rollout.argoproj.io). The CRD checks the same expression.
var ScaleKindName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]{0,62}(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// unscalable are built-in kinds without a scale subresource that a selector may
// be expected to name, refused here rather than when the action runs.
var unscalable = []string{"pod", "pods", "daemonset", "daemonsets", "job", "jobs", "service", "services"}

// knownKind is the one of KnownKinds kind names in any letter case, "" for
// none.
func knownKind(kind string) string {
	if i := slices.IndexFunc(KnownKinds, func(k string) bool { return strings.EqualFold(k, kind) }); i >= 0 {
		return KnownKinds[i]
	}
	return ""
}

// object returns the object under key, nil when absent (an error when
// required) or of another type.
func (p *parser) object(parent map[string]any, key string, path *field.Path, required bool) map[string]any {
	raw, ok := parent[key]
	if !ok || raw == nil {
		if required {
			p.errs = append(p.errs, field.Required(path.Child(key), ""))
		}
		return nil
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		p.errs = append(p.errs, field.Invalid(path.Child(key), raw, "must be an object"))
		return nil
	}
	return obj
}

func (p *parser) str(parent map[string]any, key string, path *field.Path) string {
	s, _ := p.optionalStr(parent, key, path)
	return s
}

// optionalStr reads a string; wrongType is true (and reported) when the value
// is present but not a string, so that callers do not also report it missing.
func (p *parser) optionalStr(parent map[string]any, key string, path *field.Path) (s string, wrongType bool) {
	raw, ok := parent[key]
	if !ok || raw == nil {
		return "", false
	}
	s, ok = raw.(string)
	if !ok {
		p.errs = append(p.errs, field.Invalid(path.Child(key), raw, "must be a string"))
	}
	return s, !ok
}

func (p *parser) boolean(parent map[string]any, key string, path *field.Path) bool {
	raw, ok := parent[key]
	if !ok || raw == nil {
		return false
	}
	b, ok := raw.(bool)
	if !ok {
		p.errs = append(p.errs, field.Invalid(path.Child(key), raw, "must be true or false"))
	}
	return b
}

// integer reads a whole number of at least min and at most MaxSeconds.
func (p *parser) integer(parent map[string]any, key string, path *field.Path, def, min int64) int64 {
	raw, ok := parent[key]
	if !ok || raw == nil {
		return def
	}
	fp := path.Child(key)
	var n int64
	switch v := raw.(type) {
	case int64:
		n = v
	case int:
		n = int64(v)
	case int32:
		n = int64(v)
	case float64:
		if v != math.Trunc(v) || math.Abs(v) > MaxSeconds+1 {
			p.errs = append(p.errs, field.Invalid(fp, raw, "must be a whole number"))
			return def
		}
		n = int64(v)
	default:
		p.errs = append(p.errs, field.Invalid(fp, raw, "must be a whole number"))
		return def
	}
	if n < min || n > MaxSeconds {
		p.errs = append(p.errs, field.Invalid(fp, n, fmt.Sprintf("must be between %d and %d", min, MaxSeconds)))
		return def
	}
	return n
}

// labels reads a label map. Values that are numbers or booleans are taken as
// their text, as the original operator's JSON binding did.
func (p *parser) labels(parent map[string]any, key string, path *field.Path) map[string]string {
	raw, ok := parent[key]
	if !ok || raw == nil {
		return nil
	}
	lp := path.Child(key)
	obj, ok := raw.(map[string]any)
	if !ok {
		p.errs = append(p.errs, field.Invalid(lp, raw, "must be a map of label names to values"))
		return nil
	}
	p.tooMany(lp, len(obj), maxLabels)
	out := make(map[string]string, len(obj))
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		v := obj[k]
		kp := lp.Key(k)
		var value string
		switch v := v.(type) {
		case string:
			value = v
		case bool:
			value = strconv.FormatBool(v)
		case int64:
			value = strconv.FormatInt(v, 10)
		case float64:
			value = strconv.FormatFloat(v, 'f', -1, 64)
		default:
			p.errs = append(p.errs, field.Invalid(kp, v, "must be a string"))
			continue
		}
		if _, text := v.(string); !text && p.strict {
			p.errs = append(p.errs, field.Invalid(kp, v, "must be a string (nsman's CRD wants one; a sweep takes a number or boolean as its text)"))
			continue
		}
		for _, msg := range validation.IsQualifiedName(k) {
			p.errs = append(p.errs, field.Invalid(kp, k, "label name: "+msg))
		}
		for _, msg := range validation.IsValidLabelValue(value) {
			p.errs = append(p.errs, field.Invalid(kp, value, msg))
		}
		out[k] = value
	}
	return out
}
