package policy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/nsman/nsman/policy/patch"
	"github.com/nsman/nsman/test/fixtures/original"
)

// manager builds a valid NamespaceManager shaped like upstream example-01, as
// a client reads it from the API server (whole numbers as int64), then
// applies the mutators in order.
func manager(mutators ...func(map[string]any)) *unstructured.Unstructured {
	obj := map[string]any{
		"apiVersion": Group + "/" + Version,
		"kind":       Kind,
		"metadata": map[string]any{
			"name":       "example-01",
			"namespace":  "example-01",
			"uid":        "6f1c2a9e-0d43-4d7b-9b7e-6c1f0a2b3c4d",
			"generation": int64(2),
		},
		"spec": map[string]any{
			"policies": []any{ttlPolicy("delete namespace when TTL elapses")},
		},
	}
	for _, mutate := range mutators {
		mutate(obj)
	}
	return &unstructured.Unstructured{Object: obj}
}

// ttlPolicy builds a TTL policy of 40 seconds whose action is DELETE.
func ttlPolicy(name string, mutators ...func(map[string]any)) map[string]any {
	p := map[string]any{
		"name": name,
		"condition": map[string]any{
			"type":   ConditionTTL,
			"params": map[string]any{"ttlSeconds": int64(40)},
		},
		"action": map[string]any{"type": ActionDelete},
	}
	for _, mutate := range mutators {
		mutate(p)
	}
	return p
}

// podsPolicy builds a PODS_SUCCEED policy without params whose action is
// DELETE.
func podsPolicy(name string, mutators ...func(map[string]any)) map[string]any {
	p := map[string]any{
		"name":      name,
		"condition": map[string]any{"type": ConditionPodsSucceed},
		"action":    map[string]any{"type": ActionDelete},
	}
	for _, mutate := range mutators {
		mutate(p)
	}
	return p
}

// policies replaces spec.policies.
func policies(items ...any) func(map[string]any) {
	return set(items, "spec", "policies")
}

// set returns a mutator that stores value at path below the object it is
// applied to, creating objects on the way; a numeric segment indexes a list.
func set(value any, path ...string) func(map[string]any) {
	return func(root map[string]any) {
		parent, last := walk(root, path)
		store(parent, last, value)
	}
}

// del returns a mutator that removes the field at path.
func del(path ...string) func(map[string]any) {
	return func(root map[string]any) {
		parent, last := walk(root, path)
		obj, ok := parent.(map[string]any)
		if !ok {
			panic(fmt.Sprintf("del %v: parent is %T", path, parent))
		}
		delete(obj, last)
	}
}

func walk(root map[string]any, path []string) (parent any, last string) {
	var node any = root
	for _, seg := range path[:len(path)-1] {
		switch n := node.(type) {
		case map[string]any:
			next, ok := n[seg].(map[string]any)
			if _, isList := n[seg].([]any); isList {
				node = n[seg]
				continue
			}
			if !ok {
				next = map[string]any{}
				n[seg] = next
			}
			node = next
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i >= len(n) {
				panic(fmt.Sprintf("path %v: bad index %q", path, seg))
			}
			node = n[i]
		default:
			panic(fmt.Sprintf("path %v: cannot descend into %T", path, node))
		}
	}
	return node, path[len(path)-1]
}

func store(parent any, key string, value any) {
	switch p := parent.(type) {
	case map[string]any:
		p[key] = value
	case []any:
		i, err := strconv.Atoi(key)
		if err != nil || i >= len(p) {
			panic(fmt.Sprintf("bad index %q", key))
		}
		p[i] = value
	default:
		panic(fmt.Sprintf("cannot set %q in %T", key, parent))
	}
}

// wantManager is what Parse makes of manager() without mutators, changed by
// the mutators.
func wantManager(mutators ...func(*Manager)) Manager {
	m := Manager{
		Namespace:  "example-01",
		Name:       "example-01",
		UID:        "6f1c2a9e-0d43-4d7b-9b7e-6c1f0a2b3c4d",
		Generation: 2,
		Policies:   []Policy{wantTTL("delete namespace when TTL elapses", 40*time.Second)},
	}
	for _, mutate := range mutators {
		mutate(&m)
	}
	return m
}

func wantTTL(name string, ttl time.Duration) Policy {
	return Policy{
		Name:      name,
		Condition: Condition{Type: ConditionTTL, TTL: ttl},
		Action:    Action{Type: ActionDelete},
		Final:     true,
	}
}

func wantPods(name string, mutators ...func(*Condition)) Policy {
	c := Condition{
		Type:         ConditionPodsSucceed,
		InitialDelay: DefaultInitialDelay,
		Period:       DefaultPeriod,
		MinChecks:    DefaultMinChecks,
	}
	for _, mutate := range mutators {
		mutate(&c)
	}
	return Policy{Name: name, Condition: c, Action: Action{Type: ActionDelete}, Final: true}
}

func wantPolicies(ps ...Policy) func(*Manager) {
	return func(m *Manager) { m.Policies = ps }
}

// normalized drops what the comparison of Managers must not depend on: Raw,
// checked apart, and the difference between empty and nil maps and lists.
func normalized(m Manager) Manager {
	m.Arming = "" // TestArming checks it
	m.Policies = slices.Clone(m.Policies)
	if len(m.Policies) == 0 {
		m.Policies = nil
	}
	for i := range m.Policies {
		p := &m.Policies[i]
		p.Raw = nil
		if len(p.Condition.PodLabels) == 0 {
			p.Condition.PodLabels = nil
		}
		p.Action.Selectors = slices.Clone(p.Action.Selectors)
		if len(p.Action.Selectors) == 0 {
			p.Action.Selectors = nil
		}
		for j := range p.Action.Selectors {
			if len(p.Action.Selectors[j].Labels) == 0 {
				p.Action.Selectors[j].Labels = nil
			}
		}
	}
	return m
}

// fieldErr is the part of a field.Error a test pins down: which field, and
// what kind of problem.
type fieldErr struct {
	Type  field.ErrorType
	Field string
}

func (e fieldErr) String() string { return fmt.Sprintf("%s: %s", e.Field, e.Type) }

func invalid(path string) fieldErr      { return fieldErr{field.ErrorTypeInvalid, path} }
func required(path string) fieldErr     { return fieldErr{field.ErrorTypeRequired, path} }
func notSupported(path string) fieldErr { return fieldErr{field.ErrorTypeNotSupported, path} }
func duplicate(path string) fieldErr    { return fieldErr{field.ErrorTypeDuplicate, path} }
func forbidden(path string) fieldErr    { return fieldErr{field.ErrorTypeForbidden, path} }
func tooMany(path string) fieldErr      { return fieldErr{field.ErrorTypeTooMany, path} }
func tooLong(path string) fieldErr      { return fieldErr{field.ErrorTypeTooLong, path} }

// fieldErrs reduces errs to sorted, distinct fieldErrs, for comparing
// without depending on the order checks run in. Validators of names and
// labels may report one field several times, once per message; that counts
// once.
func fieldErrs(errs field.ErrorList) []fieldErr {
	out := make([]fieldErr, 0, len(errs))
	for _, e := range errs {
		out = append(out, fieldErr{e.Type, e.Field})
	}
	return sortedErrs(out)
}

func sortedErrs(errs []fieldErr) []fieldErr {
	out := slices.Clone(errs)
	if out == nil {
		out = []fieldErr{}
	}
	slices.SortFunc(out, func(a, b fieldErr) int {
		return strings.Compare(a.String(), b.String())
	})
	return slices.Compact(out)
}

// checkParsed fails t unless Parse accepted obj as want, with each policy's
// Raw being the policy as stored.
func checkParsed(t *testing.T, obj *unstructured.Unstructured, want Manager) {
	t.Helper()
	got, errs := Parse(obj)
	if len(errs) != 0 {
		t.Fatalf("Parse() errors = %v, want none", errs)
	}
	if !reflect.DeepEqual(normalized(got), normalized(want)) {
		t.Errorf("Parse() =\n%+v\nwant\n%+v", normalized(got), normalized(want))
	}
	stored, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "policies")
	list, _ := stored.([]any)
	if len(got.Policies) != len(list) {
		t.Fatalf("Parse() returned %d policies, the object has %d", len(got.Policies), len(list))
	}
	for i, p := range got.Policies {
		if !reflect.DeepEqual(p.Raw, list[i]) {
			t.Errorf("Policies[%d].Raw = %v, want the stored policy %v", i, p.Raw, list[i])
		}
	}
}

// checkRejected fails t unless Parse reported exactly want.
func checkRejected(t *testing.T, obj *unstructured.Unstructured, want []fieldErr) {
	t.Helper()
	_, errs := Parse(obj)
	if got, want := fieldErrs(errs), sortedErrs(want); !reflect.DeepEqual(got, want) {
		t.Errorf("Parse() errors = %v, want %v\nfull errors: %v", got, want, errs)
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		want Manager
	}{
		{
			name: "upstream TTL manifest",
			obj:  manager(),
			want: wantManager(),
		},
		{
			name: "warnBefore, longest first",
			obj:  manager(set([]any{"1h", "2d"}, "spec", "policies", "0", "warnBefore")),
			want: wantManager(func(m *Manager) { m.Policies[0].WarnBefore = []time.Duration{48 * time.Hour, time.Hour} }),
		},
		{
			name: "TTL without params defaults to 1800 seconds",
			obj:  manager(del("spec", "policies", "0", "condition", "params")),
			want: wantManager(func(m *Manager) { m.Policies[0].Condition.TTL = 1800 * time.Second }),
		},
		{
			name: "TTL with empty params defaults to 1800 seconds",
			obj:  manager(set(map[string]any{}, "spec", "policies", "0", "condition", "params")),
			want: wantManager(func(m *Manager) { m.Policies[0].Condition.TTL = DefaultTTL }),
		},
		{
			name: "TTL with null ttlSeconds defaults to 1800 seconds",
			obj:  manager(set(nil, "spec", "policies", "0", "condition", "params", "ttlSeconds")),
			want: wantManager(func(m *Manager) { m.Policies[0].Condition.TTL = DefaultTTL }),
		},
		{
			name: "PODS_SUCCEED without params takes every default",
			obj:  manager(policies(podsPolicy("delete when pods succeed"))),
			want: wantManager(wantPolicies(Policy{
				Name:  "delete when pods succeed",
				Final: true,
				Condition: Condition{
					Type:         ConditionPodsSucceed,
					InitialDelay: 60 * time.Second,
					Period:       10 * time.Second,
					MinChecks:    1,
				},
				Action: Action{Type: ActionDelete},
			})),
		},
		{
			name: "PODS_SUCCEED with every param",
			obj: manager(policies(podsPolicy("delete when pods succeed", set(map[string]any{
				"podLabels":           map[string]any{"component": "main", "type": "test"},
				"initialDelaySeconds": int64(0),
				"periodSeconds":       int64(1),
				"minChecks":           int64(3),
			}, "condition", "params")))),
			want: wantManager(wantPolicies(wantPods("delete when pods succeed", func(c *Condition) {
				c.PodLabels = map[string]string{"component": "main", "type": "test"}
				c.InitialDelay = 0
				c.Period = time.Second
				c.MinChecks = 3
			}))),
		},
		{
			name: "PODS_SUCCEED with empty podLabels selects every pod",
			obj: manager(policies(podsPolicy("delete when pods succeed",
				set(map[string]any{}, "condition", "params", "podLabels")))),
			want: wantManager(wantPolicies(wantPods("delete when pods succeed"))),
		},
		{
			name: "podLabels numbers and booleans are taken as text",
			obj: manager(policies(podsPolicy("delete when pods succeed", set(map[string]any{
				"build":   int64(42),
				"ratio":   1.5,
				"whole":   float64(3),
				"enabled": true,
				"off":     false,
				"name":    "main",
			}, "condition", "params", "podLabels")))),
			want: wantManager(wantPolicies(wantPods("delete when pods succeed", func(c *Condition) {
				c.PodLabels = map[string]string{
					"build": "42", "ratio": "1.5", "whole": "3", "enabled": "true", "off": "false", "name": "main",
				}
			}))),
		},
		{
			name: "podLabels with prefixed keys and empty values",
			obj: manager(policies(podsPolicy("delete when pods succeed", set(map[string]any{
				"app.kubernetes.io/component": "e2e-tests",
				"example.com/marker":          "",
			}, "condition", "params", "podLabels")))),
			want: wantManager(wantPolicies(wantPods("delete when pods succeed", func(c *Condition) {
				c.PodLabels = map[string]string{"app.kubernetes.io/component": "e2e-tests", "example.com/marker": ""}
			}))),
		},
		{
			name: "SCALE_DOWN without params scales every workload",
			obj:  manager(set(map[string]any{"type": ActionScaleDown}, "spec", "policies", "0", "action")),
			want: wantManager(func(m *Manager) { m.Policies[0].Action = Action{Type: ActionScaleDown} }),
		},
		{
			name: "SCALE_DOWN with an empty selector list scales every workload",
			obj: manager(set(map[string]any{"type": ActionScaleDown, "params": map[string]any{"selectors": []any{}}},
				"spec", "policies", "0", "action")),
			want: wantManager(func(m *Manager) { m.Policies[0].Action = Action{Type: ActionScaleDown} }),
		},
		{
			name: "SCALE_DOWN selector kinds in any case are normalized",
			obj: manager(set(map[string]any{"type": ActionScaleDown, "params": map[string]any{"selectors": []any{
				map[string]any{"kind": "deployment", "labels": map[string]any{"isScaleDown": "yes"}},
				map[string]any{"kind": "STATEFULSET"},
				map[string]any{"kind": "Deployment"},
				map[string]any{"kind": "statefulSet", "labels": map[string]any{"tier": "db", "replicas": int64(3)}},
				map[string]any{"kind": "DEPLOYMENT", "labels": map[string]any{}},
				map[string]any{"kind": "cronjob"},
				map[string]any{"kind": "SCALEDOBJECT"},
			}}}, "spec", "policies", "0", "action")),
			want: wantManager(func(m *Manager) {
				m.Policies[0].Action = Action{Type: ActionScaleDown, Selectors: []Selector{
					{Kind: KindDeployment, Labels: map[string]string{"isScaleDown": "yes"}},
					{Kind: KindStatefulSet},
					{Kind: KindDeployment},
					{Kind: KindStatefulSet, Labels: map[string]string{"tier": "db", "replicas": "3"}},
					{Kind: KindDeployment},
					{Kind: KindCronJob},
					{Kind: KindScaledObject},
				}}
			}),
		},
		{
			name: "SCALE_DOWN selector kinds with a scale subresource are kept as written",
			obj: manager(set(map[string]any{"type": ActionScaleDown, "params": map[string]any{"selectors": []any{
				map[string]any{"kind": "Rollout.argoproj.io"},
				map[string]any{"kind": "replicaSet", "labels": map[string]any{"tier": "web"}},
			}}}, "spec", "policies", "0", "action")),
			want: wantManager(func(m *Manager) {
				m.Policies[0].Action = Action{Type: ActionScaleDown, Selectors: []Selector{
					{Kind: "Rollout.argoproj.io"},
					{Kind: "replicaSet", Labels: map[string]string{"tier": "web"}},
				}}
			}),
		},
		{
			name: "SLEEP without params sleeps every workload and is never final",
			obj:  manager(set(map[string]any{"type": ActionSleep}, "spec", "policies", "0", "action")),
			want: wantManager(func(m *Manager) {
				m.Policies[0].Action = Action{Type: ActionSleep}
				m.Policies[0].Final = false
			}),
		},
		{
			name: "SLEEP with final false",
			obj: manager(set(map[string]any{"type": ActionSleep}, "spec", "policies", "0", "action"),
				set(false, "spec", "policies", "0", "final")),
			want: wantManager(func(m *Manager) {
				m.Policies[0].Action = Action{Type: ActionSleep}
				m.Policies[0].Final = false
			}),
		},
		{
			name: "SLEEP with final null",
			obj: manager(set(map[string]any{"type": ActionSleep}, "spec", "policies", "0", "action"),
				set(nil, "spec", "policies", "0", "final")),
			want: wantManager(func(m *Manager) {
				m.Policies[0].Action = Action{Type: ActionSleep}
				m.Policies[0].Final = false
			}),
		},
		{
			name: "SLEEP selectors as SCALE_DOWN's",
			obj: manager(set(map[string]any{"type": ActionSleep, "params": map[string]any{"selectors": []any{
				map[string]any{"kind": "deployment", "labels": map[string]any{"tier": "web"}},
				map[string]any{"kind": "CRONJOB"},
				map[string]any{"kind": "scaledObject"},
				map[string]any{"kind": "Rollout.argoproj.io"},
			}}}, "spec", "policies", "0", "action")),
			want: wantManager(func(m *Manager) {
				m.Policies[0].Action = Action{Type: ActionSleep, Selectors: []Selector{
					{Kind: KindDeployment, Labels: map[string]string{"tier": "web"}},
					{Kind: KindCronJob},
					{Kind: KindScaledObject},
					{Kind: "Rollout.argoproj.io"},
				}}
				m.Policies[0].Final = false
			}),
		},
		{
			name: "a SLEEP policy between final ones leaves them final",
			obj: manager(policies(
				ttlPolicy("delete after an hour"),
				ttlPolicy("sleep at once", set(map[string]any{"type": ActionSleep}, "action")),
				ttlPolicy("stage", set(false, "final")),
			)),
			want: wantManager(wantPolicies(
				wantTTL("delete after an hour", 40*time.Second),
				Policy{Name: "sleep at once", Condition: Condition{Type: ConditionTTL, TTL: 40 * time.Second}, Action: Action{Type: ActionSleep}},
				Policy{Name: "stage", Condition: Condition{Type: ConditionTTL, TTL: 40 * time.Second}, Action: Action{Type: ActionDelete}},
			)),
		},
		{
			name: "WEBHOOK with an http url",
			obj: manager(set(map[string]any{"type": ActionWebhook, "params": map[string]any{
				"url": "http://receiver.ci-tools.svc.cluster.local/hooks/namespace-done",
			}}, "spec", "policies", "0", "action")),
			want: wantManager(func(m *Manager) {
				m.Policies[0].Action = Action{Type: ActionWebhook, URL: "http://receiver.ci-tools.svc.cluster.local/hooks/namespace-done"}
			}),
		},
		{
			name: "WEBHOOK with an https url, port, query and IP host",
			obj: manager(set(map[string]any{"type": ActionWebhook, "params": map[string]any{
				"url": "https://10.0.0.7:8443/hook?team=qa",
			}}, "spec", "policies", "0", "action")),
			want: wantManager(func(m *Manager) {
				m.Policies[0].Action = Action{Type: ActionWebhook, URL: "https://10.0.0.7:8443/hook?team=qa"}
			}),
		},
		{
			name: "DELETE via owner",
			obj:  manager(set(map[string]any{"type": ActionDelete, "params": map[string]any{"via": "owner"}}, "spec", "policies", "0", "action")),
			want: wantManager(func(m *Manager) {
				m.Policies[0].Action = Action{Type: ActionDelete, Via: ViaOwner}
			}),
		},
		{
			name: "SLEEP to 1 replica",
			obj:  manager(set(map[string]any{"type": ActionSleep, "params": map[string]any{"replicas": int64(1)}}, "spec", "policies", "0", "action")),
			want: wantManager(func(m *Manager) {
				m.Policies[0].Action = Action{Type: ActionSleep, SleepTo: SleepTo{Replicas: 1}}
				m.Policies[0].Final = false
			}),
		},
		{
			name: "SCALE_DOWN to 2 replicas, a whole float as JSON decodes it",
			obj:  manager(set(map[string]any{"type": ActionScaleDown, "params": map[string]any{"replicas": float64(2)}}, "spec", "policies", "0", "action")),
			want: wantManager(func(m *Manager) {
				m.Policies[0].Action = Action{Type: ActionScaleDown, SleepTo: SleepTo{Replicas: 2}}
			}),
		},
		{
			name: "SLEEP to 0 replicas, as without",
			obj:  manager(set(map[string]any{"type": ActionSleep, "params": map[string]any{"replicas": int64(0)}}, "spec", "policies", "0", "action")),
			want: wantManager(func(m *Manager) {
				m.Policies[0].Action = Action{Type: ActionSleep}
				m.Policies[0].Final = false
			}),
		},
		{
			name: "SLEEP parks load balancers",
			obj:  manager(set(map[string]any{"type": ActionSleep, "params": map[string]any{"loadBalancers": true, "replicas": int64(1)}}, "spec", "policies", "0", "action")),
			want: wantManager(func(m *Manager) {
				m.Policies[0].Action = Action{Type: ActionSleep, SleepTo: SleepTo{Replicas: 1, LoadBalancers: true}}
				m.Policies[0].Final = false
			}),
		},
		{
			name: "SCALE_DOWN parks load balancers",
			obj:  manager(set(map[string]any{"type": ActionScaleDown, "params": map[string]any{"loadBalancers": true}}, "spec", "policies", "0", "action")),
			want: wantManager(func(m *Manager) {
				m.Policies[0].Action = Action{Type: ActionScaleDown, SleepTo: SleepTo{LoadBalancers: true}}
			}),
		},
		{
			name: "SLEEP suspends HelmReleases",
			obj: manager(set(map[string]any{"type": ActionSleep, "params": map[string]any{"patches": []any{
				map[string]any{"kind": "HelmRelease.helm.toolkit.fluxcd.io", "labels": map[string]any{"tier": "web"}, "patch": map[string]any{"spec": map[string]any{"suspend": true}}},
			}}}, "spec", "policies", "0", "action")),
			want: wantManager(func(m *Manager) {
				m.Policies[0].Action = Action{Type: ActionSleep, SleepTo: SleepTo{Patches: []patch.Patch{
					{Kind: "HelmRelease", Group: "helm.toolkit.fluxcd.io", Labels: map[string]string{"tier": "web"}, Merge: map[string]any{"spec": map[string]any{"suspend": true}}},
				}}}
				m.Policies[0].Final = false
			}),
		},
		{
			name: "SCALE_DOWN suspends Kustomizations",
			obj: manager(set(map[string]any{"type": ActionScaleDown, "params": map[string]any{"patches": []any{
				map[string]any{"kind": "Kustomization.kustomize.toolkit.fluxcd.io", "patch": map[string]any{"spec": map[string]any{"suspend": true}}},
			}}}, "spec", "policies", "0", "action")),
			want: wantManager(func(m *Manager) {
				m.Policies[0].Action = Action{Type: ActionScaleDown, SleepTo: SleepTo{Patches: []patch.Patch{
					{Kind: "Kustomization", Group: "kustomize.toolkit.fluxcd.io", Merge: map[string]any{"spec": map[string]any{"suspend": true}}},
				}}}
			}),
		},
		{
			name: "WEBHOOK scheme in upper case",
			obj: manager(set(map[string]any{"type": ActionWebhook, "params": map[string]any{"url": "HTTPS://hooks.example.com/x"}},
				"spec", "policies", "0", "action")),
			want: wantManager(func(m *Manager) {
				m.Policies[0].Action = Action{Type: ActionWebhook, URL: "HTTPS://hooks.example.com/x"}
			}),
		},
		{
			name: "spec.namespace names the target",
			obj: manager(
				set("cleanup-for-run-2", "metadata", "name"),
				set("namespace-manager", "metadata", "namespace"),
				set("e2e-run-2", "spec", "namespace"),
			),
			want: wantManager(func(m *Manager) {
				m.Name, m.Namespace, m.TargetNamespace = "cleanup-for-run-2", "namespace-manager", "e2e-run-2"
			}),
		},
		{
			name: "a name that is no DNS label is fine when spec.namespace names the target",
			obj:  manager(set("cleanup.e2e", "metadata", "name"), set("e2e-42", "spec", "namespace")),
			want: wantManager(func(m *Manager) { m.Name, m.TargetNamespace = "cleanup.e2e", "e2e-42" }),
		},
		{
			name: "empty spec.namespace falls back to the name",
			obj:  manager(set("", "spec", "namespace")),
			want: wantManager(),
		},
		{
			name: "deactivated",
			obj:  manager(set(true, "spec", "deactivated")),
			want: wantManager(func(m *Manager) { m.Deactivated = true }),
		},
		{
			name: "deactivated false and null",
			obj:  manager(set(false, "spec", "deactivated"), set(nil, "spec", "namespace")),
			want: wantManager(),
		},
		{
			name: "unknown fields are ignored",
			obj: manager(
				set("x", "spec", "owner"),
				set(map[string]any{"phase": "whatever"}, "status"),
				set(map[string]any{"first-check": "2020-01-01T00:00:00Z"}, "metadata", "annotations"),
				set(int64(7), "spec", "policies", "0", "priority"),
				set([]any{"a"}, "spec", "policies", "0", "condition", "extra"),
				set("x", "spec", "policies", "0", "condition", "params", "unknownSeconds"),
				set(map[string]any{"dryRun": true}, "spec", "policies", "0", "action", "params"),
			),
			want: wantManager(),
		},
		{
			name: "several policies keep their order",
			obj: manager(policies(
				podsPolicy("first", set(map[string]any{"minChecks": int64(2)}, "condition", "params")),
				ttlPolicy("second"),
				ttlPolicy("third", set(map[string]any{"type": ActionWebhook, "params": map[string]any{"url": "http://hook"}}, "action")),
			)),
			want: wantManager(wantPolicies(
				wantPods("first", func(c *Condition) { c.MinChecks = 2 }),
				wantTTL("second", 40*time.Second),
				Policy{
					Name:      "third",
					Final:     true,
					Condition: Condition{Type: ConditionTTL, TTL: 40 * time.Second},
					Action:    Action{Type: ActionWebhook, URL: "http://hook"},
				},
			)),
		},
		{
			name: "policy name of 3 characters",
			obj:  manager(policies(ttlPolicy("a_1"))),
			want: wantManager(wantPolicies(wantTTL("a_1", 40*time.Second))),
		},
		{
			name: "policy name of 92 characters",
			obj:  manager(policies(ttlPolicy("a" + strings.Repeat(" ", 90) + "b"))),
			want: wantManager(wantPolicies(wantTTL("a"+strings.Repeat(" ", 90)+"b", 40*time.Second))),
		},
		{
			name: "same name in different case is no duplicate",
			obj:  manager(policies(ttlPolicy("cleanup"), ttlPolicy("Cleanup"))),
			want: wantManager(wantPolicies(wantTTL("cleanup", 40*time.Second), wantTTL("Cleanup", 40*time.Second))),
		},
		{
			name: "no kind is accepted",
			obj:  manager(del("kind")),
			want: wantManager(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkParsed(t, tt.obj, tt.want)
		})
	}
}

func TestParseRejects(t *testing.T) {
	const p0 = "spec.policies[0]"
	webhook := func(params any) func(map[string]any) {
		a := map[string]any{"type": ActionWebhook}
		if params != nil {
			a["params"] = params
		}
		return set(a, "spec", "policies", "0", "action")
	}
	webhookURL := func(url any) func(map[string]any) {
		return webhook(map[string]any{"url": url})
	}
	scaleDown := func(selectors any) func(map[string]any) {
		return set(map[string]any{"type": ActionScaleDown, "params": map[string]any{"selectors": selectors}},
			"spec", "policies", "0", "action")
	}
	sleepPatches := func(patches any) func(map[string]any) {
		return set(map[string]any{"type": ActionSleep, "params": map[string]any{"patches": patches}}, "spec", "policies", "0", "action")
	}
	podLabels := func(labels any) func(map[string]any) {
		return policies(podsPolicy("delete when pods succeed", set(labels, "condition", "params", "podLabels")))
	}
	name := func(n any) func(map[string]any) { return set(n, "spec", "policies", "0", "name") }

	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		want []fieldErr
	}{
		// The shape of the object, which the original CRD does not check.
		{name: "another kind", obj: manager(set("Namespace", "kind")), want: []fieldErr{invalid("kind")}},
		{name: "no spec", obj: manager(del("spec")), want: []fieldErr{required("spec")}},
		{name: "null spec", obj: manager(set(nil, "spec")), want: []fieldErr{required("spec")}},
		{name: "spec is a string", obj: manager(set("policies", "spec")), want: []fieldErr{invalid("spec")}},
		{name: "spec is a list", obj: manager(set([]any{}, "spec")), want: []fieldErr{invalid("spec")}},
		{name: "no policies", obj: manager(del("spec", "policies")), want: []fieldErr{required("spec.policies")}},
		{name: "null policies", obj: manager(set(nil, "spec", "policies")), want: []fieldErr{required("spec.policies")}},
		{name: "empty policies list", obj: manager(policies()), want: []fieldErr{required("spec.policies")}},
		{name: "policies is an object", obj: manager(set(map[string]any{}, "spec", "policies")), want: []fieldErr{invalid("spec.policies")}},
		{name: "a policy is a string", obj: manager(policies("delete")), want: []fieldErr{invalid(p0)}},
		{
			name: "a string policy after a valid one",
			obj:  manager(policies(ttlPolicy("valid one"), "delete", nil)),
			want: []fieldErr{invalid("spec.policies[1]"), invalid("spec.policies[2]")},
		},
		{name: "warnBefore is a string", obj: manager(set("1h", "spec", "policies", "0", "warnBefore")), want: []fieldErr{invalid(p0 + ".warnBefore")}},
		{name: "warnBefore under a minute", obj: manager(set([]any{"30s"}, "spec", "policies", "0", "warnBefore")), want: []fieldErr{invalid(p0 + ".warnBefore[0]")}},
		{name: "warnBefore twice", obj: manager(set([]any{"1h", "60m"}, "spec", "policies", "0", "warnBefore")), want: []fieldErr{duplicate(p0 + ".warnBefore[1]")}},
		{
			name: "warnBefore five",
			obj:  manager(set([]any{"1h", "2h", "3h", "4h", "5h"}, "spec", "policies", "0", "warnBefore")),
			want: []fieldErr{tooMany(p0 + ".warnBefore")},
		},
		{
			name: "warnBefore on a condition without a due time",
			obj:  manager(policies(podsPolicy("delete when pods succeed", set([]any{"1h"}, "warnBefore")))),
			want: []fieldErr{forbidden(p0 + ".warnBefore")},
		},
		{name: "deactivated is a string", obj: manager(set("yes", "spec", "deactivated")), want: []fieldErr{invalid("spec.deactivated")}},
		{name: "deactivated is a number", obj: manager(set(int64(1), "spec", "deactivated")), want: []fieldErr{invalid("spec.deactivated")}},
		{
			name: "ttlSeconds is a string",
			obj:  manager(set("40", "spec", "policies", "0", "condition", "params", "ttlSeconds")),
			want: []fieldErr{invalid(p0 + ".condition.params.ttlSeconds")},
		},
		{
			name: "condition params is a list",
			obj:  manager(set([]any{map[string]any{"ttlSeconds": int64(40)}}, "spec", "policies", "0", "condition", "params")),
			want: []fieldErr{invalid(p0 + ".condition.params")},
		},
		{
			name: "condition params is a string",
			obj:  manager(set("ttlSeconds=40", "spec", "policies", "0", "condition", "params")),
			want: []fieldErr{invalid(p0 + ".condition.params")},
		},
		{
			name: "action params is a list",
			obj:  manager(set(map[string]any{"type": ActionScaleDown, "params": []any{"Deployment"}}, "spec", "policies", "0", "action")),
			want: []fieldErr{invalid(p0 + ".action.params")},
		},

		// Condition and action.
		{name: "no condition", obj: manager(del("spec", "policies", "0", "condition")), want: []fieldErr{required(p0 + ".condition")}},
		{name: "condition is a string", obj: manager(set("TTL", "spec", "policies", "0", "condition")), want: []fieldErr{invalid(p0 + ".condition")}},
		{name: "no condition type", obj: manager(del("spec", "policies", "0", "condition", "type")), want: []fieldErr{required(p0 + ".condition.type")}},
		{name: "empty condition type", obj: manager(set("", "spec", "policies", "0", "condition", "type")), want: []fieldErr{required(p0 + ".condition.type")}},
		{name: "condition type in lower case", obj: manager(set("ttl", "spec", "policies", "0", "condition", "type")), want: []fieldErr{notSupported(p0 + ".condition.type")}},
		{name: "condition type in mixed case", obj: manager(set("Pods_Succeed", "spec", "policies", "0", "condition", "type")), want: []fieldErr{notSupported(p0 + ".condition.type")}},
		{name: "unknown condition type", obj: manager(set("CRON", "spec", "policies", "0", "condition", "type")), want: []fieldErr{notSupported(p0 + ".condition.type")}},
		{name: "condition type is a number", obj: manager(set(int64(1), "spec", "policies", "0", "condition", "type")), want: []fieldErr{invalid(p0 + ".condition.type")}},
		{name: "no action", obj: manager(del("spec", "policies", "0", "action")), want: []fieldErr{required(p0 + ".action")}},
		{name: "action is a string", obj: manager(set("DELETE", "spec", "policies", "0", "action")), want: []fieldErr{invalid(p0 + ".action")}},
		{name: "no action type", obj: manager(set(map[string]any{}, "spec", "policies", "0", "action")), want: []fieldErr{required(p0 + ".action.type")}},
		{name: "action type in lower case", obj: manager(set("delete", "spec", "policies", "0", "action", "type")), want: []fieldErr{notSupported(p0 + ".action.type")}},
		{name: "unknown action type", obj: manager(set("SCALE_UP", "spec", "policies", "0", "action", "type")), want: []fieldErr{notSupported(p0 + ".action.type")}},
		{name: "action type is a list", obj: manager(set([]any{"DELETE"}, "spec", "policies", "0", "action", "type")), want: []fieldErr{invalid(p0 + ".action.type")}},

		// Policy names.
		{name: "no policy name", obj: manager(del("spec", "policies", "0", "name")), want: []fieldErr{required(p0 + ".name")}},
		{name: "null policy name", obj: manager(name(nil)), want: []fieldErr{required(p0 + ".name")}},
		{name: "empty policy name", obj: manager(name("")), want: []fieldErr{required(p0 + ".name")}},
		{name: "policy name is a number", obj: manager(name(int64(123))), want: []fieldErr{invalid(p0 + ".name")}},
		{name: "policy name of 2 characters", obj: manager(name("ab")), want: []fieldErr{invalid(p0 + ".name")}},
		{name: "policy name of 1 character", obj: manager(name("a")), want: []fieldErr{invalid(p0 + ".name")}},
		{name: "policy name of 93 characters", obj: manager(name("a" + strings.Repeat("b", 91) + "c")), want: []fieldErr{invalid(p0 + ".name")}},
		{name: "policy name with a leading space", obj: manager(name(" delete")), want: []fieldErr{invalid(p0 + ".name")}},
		{name: "policy name with a trailing space", obj: manager(name("delete ")), want: []fieldErr{invalid(p0 + ".name")}},
		{name: "policy name with a trailing newline", obj: manager(name("delete\n")), want: []fieldErr{invalid(p0 + ".name")}},
		{name: "policy name with a non-ASCII letter", obj: manager(name("suppression après")), want: []fieldErr{invalid(p0 + ".name")}},
		{name: "policy name with a hyphen", obj: manager(name("delete-now")), want: []fieldErr{invalid(p0 + ".name")}},
		{name: "policy name with a tab", obj: manager(name("delete\tnow")), want: []fieldErr{invalid(p0 + ".name")}},
		{
			name: "duplicate policy name",
			obj:  manager(policies(ttlPolicy("cleanup"), podsPolicy("other"), ttlPolicy("cleanup"))),
			want: []fieldErr{duplicate("spec.policies[2].name")},
		},
		{
			name: "three policies of one name",
			obj:  manager(policies(ttlPolicy("cleanup"), ttlPolicy("cleanup"), ttlPolicy("cleanup"))),
			want: []fieldErr{duplicate("spec.policies[1].name"), duplicate("spec.policies[2].name")},
		},

		// SCALE_DOWN selectors.
		{name: "selectors is an object", obj: manager(scaleDown(map[string]any{"kind": "Deployment"})), want: []fieldErr{invalid(p0 + ".action.params.selectors")}},
		{name: "a selector is a string", obj: manager(scaleDown([]any{"Deployment"})), want: []fieldErr{invalid(p0 + ".action.params.selectors[0]")}},
		{name: "a selector without kind", obj: manager(scaleDown([]any{map[string]any{"labels": map[string]any{"a": "b"}}})), want: []fieldErr{required(p0 + ".action.params.selectors[0].kind")}},
		{name: "a selector of kind Pod", obj: manager(scaleDown([]any{map[string]any{"kind": "Pod"}})), want: []fieldErr{invalid(p0 + ".action.params.selectors[0].kind")}},
		{name: "a selector of kind DaemonSet", obj: manager(scaleDown([]any{map[string]any{"kind": "daemonSet"}})), want: []fieldErr{invalid(p0 + ".action.params.selectors[0].kind")}},
		{name: "a selector of kind Service: loadBalancers parks them", obj: manager(scaleDown([]any{map[string]any{"kind": "Service"}})), want: []fieldErr{invalid(p0 + ".action.params.selectors[0].kind")}},
		{name: "a selector of plural kind", obj: manager(scaleDown([]any{map[string]any{"kind": "deployments"}})), want: []fieldErr{invalid(p0 + ".action.params.selectors[0].kind")}},
		{name: "a selector of plural known kind", obj: manager(scaleDown([]any{map[string]any{"kind": "CronJobs"}})), want: []fieldErr{invalid(p0 + ".action.params.selectors[0].kind")}},
		{name: "a selector kind with a group path", obj: manager(scaleDown([]any{map[string]any{"kind": "apps/Deployment"}})), want: []fieldErr{invalid(p0 + ".action.params.selectors[0].kind")}},
		{name: "a selector kind with an upper-case group", obj: manager(scaleDown([]any{map[string]any{"kind": "Rollout.Argoproj.io"}})), want: []fieldErr{invalid(p0 + ".action.params.selectors[0].kind")}},
		{name: "a selector kind with an empty group", obj: manager(scaleDown([]any{map[string]any{"kind": "Rollout."}})), want: []fieldErr{invalid(p0 + ".action.params.selectors[0].kind")}},
		{name: "a selector kind that is a number", obj: manager(scaleDown([]any{map[string]any{"kind": int64(1)}})), want: []fieldErr{invalid(p0 + ".action.params.selectors[0].kind")}},
		{
			name: "selector labels with an invalid key and value",
			obj: manager(scaleDown([]any{
				map[string]any{"kind": "Deployment"},
				map[string]any{"kind": "StatefulSet", "labels": map[string]any{"bad key": "x", "ok": "not ok"}},
			})),
			want: []fieldErr{
				invalid(p0 + ".action.params.selectors[1].labels[bad key]"),
				invalid(p0 + ".action.params.selectors[1].labels[ok]"),
			},
		},
		{name: "selector labels is a list", obj: manager(scaleDown([]any{map[string]any{"kind": "Deployment", "labels": []any{"a=b"}}})), want: []fieldErr{invalid(p0 + ".action.params.selectors[0].labels")}},

		// SLEEP.
		{
			name: "SLEEP with final true",
			obj: manager(set(map[string]any{"type": ActionSleep}, "spec", "policies", "0", "action"),
				set(true, "spec", "policies", "0", "final")),
			want: []fieldErr{invalid(p0 + ".final")},
		},
		{
			name: "SLEEP with final a string",
			obj: manager(set(map[string]any{"type": ActionSleep}, "spec", "policies", "0", "action"),
				set("true", "spec", "policies", "0", "final")),
			want: []fieldErr{invalid(p0 + ".final")},
		},
		{
			name: "SLEEP in lower case",
			obj:  manager(set("sleep", "spec", "policies", "0", "action", "type")),
			want: []fieldErr{notSupported(p0 + ".action.type")},
		},
		{
			name: "a SLEEP selector of kind DaemonSet",
			obj: manager(set(map[string]any{"type": ActionSleep, "params": map[string]any{"selectors": []any{map[string]any{"kind": "DaemonSet"}}}},
				"spec", "policies", "0", "action")),
			want: []fieldErr{invalid(p0 + ".action.params.selectors[0].kind")},
		},
		{
			name: "SLEEP selectors an object",
			obj: manager(set(map[string]any{"type": ActionSleep, "params": map[string]any{"selectors": map[string]any{"kind": "Deployment"}}},
				"spec", "policies", "0", "action")),
			want: []fieldErr{invalid(p0 + ".action.params.selectors")},
		},

		// DELETE via.
		{name: "DELETE via another", obj: manager(set(map[string]any{"type": ActionDelete, "params": map[string]any{"via": "application"}}, "spec", "policies", "0", "action")), want: []fieldErr{notSupported(p0 + ".action.params.via")}},
		{name: "DELETE via empty", obj: manager(set(map[string]any{"type": ActionDelete, "params": map[string]any{"via": ""}}, "spec", "policies", "0", "action")), want: []fieldErr{notSupported(p0 + ".action.params.via")}},
		{name: "DELETE via a number", obj: manager(set(map[string]any{"type": ActionDelete, "params": map[string]any{"via": int64(1)}}, "spec", "policies", "0", "action")), want: []fieldErr{invalid(p0 + ".action.params.via")}},
		// SCALE_DOWN and SLEEP replicas.
		{name: "SLEEP to -1 replicas", obj: manager(set(map[string]any{"type": ActionSleep, "params": map[string]any{"replicas": int64(-1)}}, "spec", "policies", "0", "action")), want: []fieldErr{invalid(p0 + ".action.params.replicas")}},
		{name: "SCALE_DOWN to -1 replicas", obj: manager(set(map[string]any{"type": ActionScaleDown, "params": map[string]any{"replicas": float64(-1)}}, "spec", "policies", "0", "action")), want: []fieldErr{invalid(p0 + ".action.params.replicas")}},
		{name: "SLEEP to 1.5 replicas", obj: manager(set(map[string]any{"type": ActionSleep, "params": map[string]any{"replicas": 1.5}}, "spec", "policies", "0", "action")), want: []fieldErr{invalid(p0 + ".action.params.replicas")}},
		{name: "SLEEP to replicas a string", obj: manager(set(map[string]any{"type": ActionSleep, "params": map[string]any{"replicas": "1"}}, "spec", "policies", "0", "action")), want: []fieldErr{invalid(p0 + ".action.params.replicas")}},
		{name: "SLEEP to more replicas than an int32", obj: manager(set(map[string]any{"type": ActionSleep, "params": map[string]any{"replicas": int64(1) << 31}}, "spec", "policies", "0", "action")), want: []fieldErr{invalid(p0 + ".action.params.replicas")}},
		// SCALE_DOWN and SLEEP loadBalancers.
		{name: "SLEEP loadBalancers a string", obj: manager(set(map[string]any{"type": ActionSleep, "params": map[string]any{"loadBalancers": "true"}}, "spec", "policies", "0", "action")), want: []fieldErr{invalid(p0 + ".action.params.loadBalancers")}},
		// SCALE_DOWN and SLEEP patches (policy/patch tests each refusal).
		{name: "SLEEP patches an object", obj: manager(sleepPatches(map[string]any{"kind": "HelmRelease.helm.toolkit.fluxcd.io", "patch": map[string]any{"spec": map[string]any{"suspend": true}}})), want: []fieldErr{invalid(p0 + ".action.params.patches")}},
		{name: "SLEEP patches metadata.name", obj: manager(sleepPatches([]any{map[string]any{"kind": "HelmRelease.helm.toolkit.fluxcd.io", "patch": map[string]any{"metadata": map[string]any{"name": "x"}}}})), want: []fieldErr{forbidden(p0 + ".action.params.patches[0].patch.metadata.name")}},
		{name: "SLEEP patches a Deployment", obj: manager(sleepPatches([]any{map[string]any{"kind": "Deployment.apps", "patch": map[string]any{"spec": map[string]any{"paused": true}}}})), want: []fieldErr{invalid(p0 + ".action.params.patches[0].kind")}},
		{name: "SLEEP patches a ScaledObject", obj: manager(sleepPatches([]any{map[string]any{"kind": "scaledObject.keda.sh", "patch": map[string]any{"spec": map[string]any{"paused": true}}}})), want: []fieldErr{invalid(p0 + ".action.params.patches[0].kind")}},
		{name: "SLEEP patches a NamespaceManager", obj: manager(sleepPatches([]any{map[string]any{"kind": "NamespaceManager.k8s.consol.de", "patch": map[string]any{"spec": map[string]any{"deactivated": true}}}})), want: []fieldErr{invalid(p0 + ".action.params.patches[0].kind")}},
		{name: "SLEEP patches nsman's annotation", obj: manager(sleepPatches([]any{map[string]any{"kind": "HelmRelease.helm.toolkit.fluxcd.io", "patch": map[string]any{"metadata": map[string]any{"annotations": map[string]any{TouchedAnnotation: nil}}}}})), want: []fieldErr{forbidden(p0 + ".action.params.patches[0].patch.metadata.annotations[nsman.k8s.consol.de/touched]")}},
		// WEBHOOK url.
		{name: "WEBHOOK without params", obj: manager(webhook(nil)), want: []fieldErr{required(p0 + ".action.params.url")}},
		{name: "WEBHOOK without url", obj: manager(webhook(map[string]any{"method": "POST"})), want: []fieldErr{required(p0 + ".action.params.url")}},
		{name: "WEBHOOK with an empty url", obj: manager(webhookURL("")), want: []fieldErr{required(p0 + ".action.params.url")}},
		{name: "WEBHOOK url is a number", obj: manager(webhookURL(int64(80))), want: []fieldErr{invalid(p0 + ".action.params.url")}},
		{name: "WEBHOOK ftp url", obj: manager(webhookURL("ftp://x")), want: []fieldErr{invalid(p0 + ".action.params.url")}},
		{name: "WEBHOOK relative url", obj: manager(webhookURL("/relative")), want: []fieldErr{invalid(p0 + ".action.params.url")}},
		{name: "WEBHOOK url without scheme", obj: manager(webhookURL("hooks.example.com/x")), want: []fieldErr{invalid(p0 + ".action.params.url")}},
		{name: "WEBHOOK http url without host", obj: manager(webhookURL("http://")), want: []fieldErr{invalid(p0 + ".action.params.url")}},
		{name: "WEBHOOK https url with only a path", obj: manager(webhookURL("https:///hook")), want: []fieldErr{invalid(p0 + ".action.params.url")}},
		{name: "WEBHOOK url with only a port", obj: manager(webhookURL("http://:8080/hook")), want: []fieldErr{invalid(p0 + ".action.params.url")}},
		{name: "WEBHOOK opaque url", obj: manager(webhookURL("http:hooks.example.com")), want: []fieldErr{invalid(p0 + ".action.params.url")}},
		{name: "WEBHOOK url with credentials", obj: manager(webhookURL("https://user:pw@x")), want: []fieldErr{invalid(p0 + ".action.params.url")}},
		{name: "WEBHOOK url with a user", obj: manager(webhookURL("https://user@x")), want: []fieldErr{invalid(p0 + ".action.params.url")}},
		{name: "WEBHOOK url that does not parse", obj: manager(webhookURL("http://bad host/")), want: []fieldErr{invalid(p0 + ".action.params.url")}},
		{name: "WEBHOOK javascript url", obj: manager(webhookURL("javascript:alert(1)")), want: []fieldErr{invalid(p0 + ".action.params.url")}},

		// podLabels.
		{name: "podLabels is a list", obj: manager(podLabels([]any{"component=main"})), want: []fieldErr{invalid(p0 + ".condition.params.podLabels")}},
		{name: "podLabels is a string", obj: manager(podLabels("component=main")), want: []fieldErr{invalid(p0 + ".condition.params.podLabels")}},
		{name: "podLabels key with a space", obj: manager(podLabels(map[string]any{"bad key": "x"})), want: []fieldErr{invalid(p0 + ".condition.params.podLabels[bad key]")}},
		{name: "podLabels empty key", obj: manager(podLabels(map[string]any{"": "x"})), want: []fieldErr{invalid(p0 + ".condition.params.podLabels[]")}},
		{name: "podLabels key with an invalid prefix", obj: manager(podLabels(map[string]any{"Example_Com/app": "x"})), want: []fieldErr{invalid(p0 + ".condition.params.podLabels[Example_Com/app]")}},
		{name: "podLabels value with a space", obj: manager(podLabels(map[string]any{"app": "my app"})), want: []fieldErr{invalid(p0 + ".condition.params.podLabels[app]")}},
		{name: "podLabels value of 64 characters", obj: manager(podLabels(map[string]any{"app": strings.Repeat("a", 64)})), want: []fieldErr{invalid(p0 + ".condition.params.podLabels[app]")}},
		{name: "podLabels negative number value", obj: manager(podLabels(map[string]any{"offset": int64(-1)})), want: []fieldErr{invalid(p0 + ".condition.params.podLabels[offset]")}},
		{name: "podLabels null value", obj: manager(podLabels(map[string]any{"app": nil})), want: []fieldErr{invalid(p0 + ".condition.params.podLabels[app]")}},
		{name: "podLabels object value", obj: manager(podLabels(map[string]any{"app": map[string]any{"name": "x"}})), want: []fieldErr{invalid(p0 + ".condition.params.podLabels[app]")}},
		{
			name: "podLabels: every bad entry is reported, good ones are not",
			obj:  manager(podLabels(map[string]any{"a b": "x", "good": "yes", "c": "-bad-"})),
			want: []fieldErr{
				invalid(p0 + ".condition.params.podLabels[a b]"),
				invalid(p0 + ".condition.params.podLabels[c]"),
			},
		},

		// Target.
		{name: "spec.namespace with upper case", obj: manager(set("Example-02", "spec", "namespace")), want: []fieldErr{invalid("spec.namespace")}},
		{name: "spec.namespace with a dot", obj: manager(set("example.02", "spec", "namespace")), want: []fieldErr{invalid("spec.namespace")}},
		{name: "spec.namespace of 64 characters", obj: manager(set(strings.Repeat("a", 64), "spec", "namespace")), want: []fieldErr{invalid("spec.namespace")}},
		{name: "spec.namespace is a number", obj: manager(set(int64(2), "spec", "namespace")), want: []fieldErr{invalid("spec.namespace")}},
		{name: "name-derived target with a dot", obj: manager(set("cleanup.e2e", "metadata", "name")), want: []fieldErr{invalid("metadata.name")}},
		{name: "name-derived target of 64 characters", obj: manager(set(strings.Repeat("n", 64), "metadata", "name")), want: []fieldErr{invalid("metadata.name")}},

		// Every problem at once.
		{
			name: "four problems in one manifest",
			obj: manager(
				set("Bad NS", "spec", "namespace"),
				policies(
					ttlPolicy("x", set(int64(-5), "condition", "params", "ttlSeconds")),
					ttlPolicy("valid name", set("KILL", "action", "type")),
				),
			),
			want: []fieldErr{
				invalid("spec.namespace"),
				invalid("spec.policies[0].name"),
				invalid("spec.policies[0].condition.params.ttlSeconds"),
				notSupported("spec.policies[1].action.type"),
			},
		},
		{
			name: "problems of every kind across policies",
			obj: manager(
				set("maybe", "spec", "deactivated"),
				policies(
					podsPolicy("pods", set(map[string]any{"periodSeconds": int64(0), "minChecks": 0.5, "podLabels": map[string]any{"a": "b c"}}, "condition", "params")),
					ttlPolicy("pods", set(map[string]any{"type": ActionWebhook, "params": map[string]any{"url": "ftp://x"}}, "action")),
					map[string]any{"name": "no condition or action"},
				),
			),
			want: []fieldErr{
				invalid("spec.deactivated"),
				invalid("spec.policies[0].condition.params.periodSeconds"),
				invalid("spec.policies[0].condition.params.minChecks"),
				invalid("spec.policies[0].condition.params.podLabels[a]"),
				duplicate("spec.policies[1].name"),
				invalid("spec.policies[1].action.params.url"),
				required("spec.policies[2].condition"),
				required("spec.policies[2].action"),
			},
		},
		{
			name: "another kind and no spec",
			obj:  manager(set("ConfigMap", "kind"), del("spec")),
			want: []fieldErr{invalid("kind"), required("spec")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkRejected(t, tt.obj, tt.want)
		})
	}
}

// TestParseNumbers covers every numeric param: its range, and the Go types
// a number can arrive as (int64 from the API server's JSON, float64 from
// encoding/json or a YAML decoder, int and int32 from objects built in Go).
func TestParseNumbers(t *testing.T) {
	ttl := func(d time.Duration) Condition { return Condition{Type: ConditionTTL, TTL: d} }
	const name = "numbers"
	pods := func(mutate func(*Condition)) Condition { return wantPods(name, mutate).Condition }
	delay := func(d time.Duration) Condition { return pods(func(c *Condition) { c.InitialDelay = d }) }
	period := func(d time.Duration) Condition { return pods(func(c *Condition) { c.Period = d }) }
	minChecks := func(n int) Condition { return pods(func(c *Condition) { c.MinChecks = n }) }
	const maxDuration = MaxSeconds * time.Second

	tests := []struct {
		name    string
		key     string
		value   any
		want    Condition // when valid
		wantErr bool
	}{
		{name: "ttlSeconds 0", key: "ttlSeconds", value: int64(0), want: ttl(0)},
		{name: "ttlSeconds 40", key: "ttlSeconds", value: int64(40), want: ttl(40 * time.Second)},
		{name: "ttlSeconds max", key: "ttlSeconds", value: int64(MaxSeconds), want: ttl(maxDuration)},
		{name: "ttlSeconds max+1", key: "ttlSeconds", value: int64(MaxSeconds + 1), wantErr: true},
		{name: "ttlSeconds huge", key: "ttlSeconds", value: int64(math.MaxInt64), wantErr: true},
		{name: "ttlSeconds -1", key: "ttlSeconds", value: int64(-1), wantErr: true},
		{name: "ttlSeconds float64 40.0", key: "ttlSeconds", value: 40.0, want: ttl(40 * time.Second)},
		{name: "ttlSeconds float64 0.0", key: "ttlSeconds", value: 0.0, want: ttl(0)},
		{name: "ttlSeconds float64 max", key: "ttlSeconds", value: float64(MaxSeconds), want: ttl(maxDuration)},
		{name: "ttlSeconds float64 max+1", key: "ttlSeconds", value: float64(MaxSeconds + 1), wantErr: true},
		{name: "ttlSeconds float64 40.5", key: "ttlSeconds", value: 40.5, wantErr: true},
		{name: "ttlSeconds float64 -0.5", key: "ttlSeconds", value: -0.5, wantErr: true},
		{name: "ttlSeconds float64 -40", key: "ttlSeconds", value: -40.0, wantErr: true},
		{name: "ttlSeconds float64 1e300", key: "ttlSeconds", value: 1e300, wantErr: true},
		{name: "ttlSeconds NaN", key: "ttlSeconds", value: math.NaN(), wantErr: true},
		{name: "ttlSeconds +Inf", key: "ttlSeconds", value: math.Inf(1), wantErr: true},
		{name: "ttlSeconds int", key: "ttlSeconds", value: 40, want: ttl(40 * time.Second)},
		{name: "ttlSeconds int32", key: "ttlSeconds", value: int32(40), want: ttl(40 * time.Second)},
		{name: "ttlSeconds string", key: "ttlSeconds", value: "40", wantErr: true},
		{name: "ttlSeconds duration string", key: "ttlSeconds", value: "40s", wantErr: true},
		{name: "ttlSeconds bool", key: "ttlSeconds", value: true, wantErr: true},
		{name: "ttlSeconds object", key: "ttlSeconds", value: map[string]any{"seconds": int64(40)}, wantErr: true},

		{name: "initialDelaySeconds 0", key: "initialDelaySeconds", value: int64(0), want: delay(0)},
		{name: "initialDelaySeconds 300", key: "initialDelaySeconds", value: int64(300), want: delay(300 * time.Second)},
		{name: "initialDelaySeconds max", key: "initialDelaySeconds", value: int64(MaxSeconds), want: delay(maxDuration)},
		{name: "initialDelaySeconds max+1", key: "initialDelaySeconds", value: int64(MaxSeconds + 1), wantErr: true},
		{name: "initialDelaySeconds -1", key: "initialDelaySeconds", value: int64(-1), wantErr: true},
		{name: "initialDelaySeconds float64 60.0", key: "initialDelaySeconds", value: 60.0, want: delay(time.Minute)},
		{name: "initialDelaySeconds float64 0.1", key: "initialDelaySeconds", value: 0.1, wantErr: true},
		{name: "initialDelaySeconds string", key: "initialDelaySeconds", value: "60", wantErr: true},
		{name: "initialDelaySeconds null is the default", key: "initialDelaySeconds", value: nil, want: delay(DefaultInitialDelay)},

		{name: "periodSeconds 1", key: "periodSeconds", value: int64(1), want: period(time.Second)},
		{name: "periodSeconds 0", key: "periodSeconds", value: int64(0), wantErr: true},
		{name: "periodSeconds -10", key: "periodSeconds", value: int64(-10), wantErr: true},
		{name: "periodSeconds max", key: "periodSeconds", value: int64(MaxSeconds), want: period(maxDuration)},
		{name: "periodSeconds max+1", key: "periodSeconds", value: int64(MaxSeconds + 1), wantErr: true},
		{name: "periodSeconds float64 2.0", key: "periodSeconds", value: 2.0, want: period(2 * time.Second)},
		{name: "periodSeconds float64 0.0", key: "periodSeconds", value: 0.0, wantErr: true},
		{name: "periodSeconds float64 1.5", key: "periodSeconds", value: 1.5, wantErr: true},
		{name: "periodSeconds bool", key: "periodSeconds", value: false, wantErr: true},

		{name: "minChecks 1", key: "minChecks", value: int64(1), want: minChecks(1)},
		{name: "minChecks 3", key: "minChecks", value: int64(3), want: minChecks(3)},
		{name: "minChecks max", key: "minChecks", value: int64(MaxSeconds), want: minChecks(MaxSeconds)},
		{name: "minChecks max+1", key: "minChecks", value: int64(MaxSeconds + 1), wantErr: true},
		{name: "minChecks 0", key: "minChecks", value: int64(0), wantErr: true},
		{name: "minChecks -1", key: "minChecks", value: int64(-1), wantErr: true},
		{name: "minChecks float64 3.0", key: "minChecks", value: 3.0, want: minChecks(3)},
		{name: "minChecks float64 2.5", key: "minChecks", value: 2.5, wantErr: true},
		{name: "minChecks string", key: "minChecks", value: "3", wantErr: true},
		{name: "minChecks list", key: "minChecks", value: []any{int64(3)}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			params := map[string]any{tt.key: tt.value}
			var p map[string]any
			if tt.key == "ttlSeconds" {
				p = ttlPolicy(name, set(params, "condition", "params"))
			} else {
				p = podsPolicy(name, set(params, "condition", "params"))
			}
			obj := manager(policies(p))
			if tt.wantErr {
				checkRejected(t, obj, []fieldErr{invalid("spec.policies[0].condition.params." + tt.key)})
				return
			}
			checkParsed(t, obj, wantManager(wantPolicies(Policy{
				Name:      name,
				Final:     true,
				Condition: tt.want,
				Action:    Action{Type: ActionDelete},
			})))
		})
	}
}

// TestParseJSON parses manifests as a client decodes them from JSON, where
// 40 arrives as int64 and 40.0 as float64.
func TestParseJSON(t *testing.T) {
	manifest := func(params string) string {
		return `{"apiVersion":"k8s.consol.de/v1beta1","kind":"NamespaceManager",
			"metadata":{"name":"example-01","namespace":"example-01","uid":"u-1","generation":4},
			"spec":{"policies":[{"name":"ttl policy","condition":{"type":"TTL","params":` + params + `},
				"action":{"type":"DELETE"}}]}}`
	}
	tests := []struct {
		name     string
		json     string
		wantTTL  time.Duration
		wantErrs []fieldErr
	}{
		{name: "integer", json: manifest(`{"ttlSeconds":40}`), wantTTL: 40 * time.Second},
		{name: "whole float", json: manifest(`{"ttlSeconds":40.0}`), wantTTL: 40 * time.Second},
		{name: "exponent", json: manifest(`{"ttlSeconds":4e1}`), wantTTL: 40 * time.Second},
		{name: "fraction", json: manifest(`{"ttlSeconds":40.5}`), wantErrs: []fieldErr{invalid("spec.policies[0].condition.params.ttlSeconds")}},
		{name: "quoted", json: manifest(`{"ttlSeconds":"40"}`), wantErrs: []fieldErr{invalid("spec.policies[0].condition.params.ttlSeconds")}},
		{name: "beyond int64", json: manifest(`{"ttlSeconds":92233720368547758070}`), wantErrs: []fieldErr{invalid("spec.policies[0].condition.params.ttlSeconds")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON([]byte(tt.json)); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if tt.wantErrs != nil {
				checkRejected(t, obj, tt.wantErrs)
				return
			}
			checkParsed(t, obj, Manager{
				Namespace: "example-01", Name: "example-01", UID: "u-1", Generation: 4,
				Policies: []Policy{wantTTL("ttl policy", tt.wantTTL)},
			})
		})
	}
}

// TestParseUpstreamExamples parses the original operator's four example
// manifests, as the project's fixture in test/fixtures/original describes
// them, which nsman must accept unchanged. The expectations are derived from
// each manifest itself: no problem, the target rule, and every policy's name,
// types, parameters and defaults as written.
func TestParseUpstreamExamples(t *testing.T) {
	seen := map[string]bool{}
	for _, file := range original.Examples(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			managers := readManagers(t, file)
			if len(managers) != 1 {
				t.Fatalf("%s holds %d NamespaceManagers, want 1", file, len(managers))
			}
			obj := managers[0]
			m, problems := Parse(obj)
			if len(problems) > 0 {
				t.Fatalf("problems: %v", problems)
			}
			target, _, _ := unstructured.NestedString(obj.Object, "spec", "namespace")
			if target == "" {
				target = obj.GetName()
			}
			if m.Target() != target || m.Name != obj.GetName() || m.Namespace != obj.GetNamespace() {
				t.Errorf("manager %s/%s targeting %s, want %s/%s targeting %s", m.Namespace, m.Name, m.Target(), obj.GetNamespace(), obj.GetName(), target)
			}
			raw, _, _ := unstructured.NestedSlice(obj.Object, "spec", "policies")
			if len(m.Policies) != len(raw) {
				t.Fatalf("%d policies, want %d", len(m.Policies), len(raw))
			}
			for i, r := range raw {
				checkPolicyAsWritten(t, m.Policies[i], r.(map[string]any))
				seen[m.Policies[i].Condition.Type] = true
				seen[m.Policies[i].Action.Type] = true
			}
		})
	}
	for _, kind := range []string{ConditionTTL, ConditionPodsSucceed, ActionDelete, ActionScaleDown, ActionWebhook} {
		if !seen[kind] {
			t.Errorf("no upstream example uses %s", kind)
		}
	}
}

// checkPolicyAsWritten compares a parsed policy with the manifest's.
func checkPolicyAsWritten(t *testing.T, p Policy, raw map[string]any) {
	t.Helper()
	str := func(fields ...string) string {
		v, _, _ := unstructured.NestedString(raw, fields...)
		return v
	}
	seconds := func(def time.Duration, fields ...string) time.Duration {
		if v, ok, _ := unstructured.NestedInt64(raw, fields...); ok {
			return time.Duration(v) * time.Second
		}
		return def
	}
	if p.Name != str("name") || p.Condition.Type != str("condition", "type") || p.Action.Type != str("action", "type") {
		t.Errorf("policy %q %s/%s, want %q %s/%s", p.Name, p.Condition.Type, p.Action.Type, str("name"), str("condition", "type"), str("action", "type"))
	}
	switch p.Condition.Type {
	case ConditionTTL:
		if want := seconds(DefaultTTL, "condition", "params", "ttlSeconds"); p.Condition.TTL != want {
			t.Errorf("TTL %v, want %v", p.Condition.TTL, want)
		}
	case ConditionPodsSucceed:
		labels, _, _ := unstructured.NestedStringMap(raw, "condition", "params", "podLabels")
		if len(labels) == 0 {
			labels = nil
		}
		if !maps.Equal(p.Condition.PodLabels, labels) ||
			p.Condition.InitialDelay != seconds(DefaultInitialDelay, "condition", "params", "initialDelaySeconds") ||
			p.Condition.Period != seconds(DefaultPeriod, "condition", "params", "periodSeconds") || p.Condition.MinChecks != DefaultMinChecks {
			t.Errorf("condition %+v does not match %v", p.Condition, raw["condition"])
		}
	}
	switch p.Action.Type {
	case ActionWebhook:
		if p.Action.URL != str("action", "params", "url") {
			t.Errorf("url %q, want %q", p.Action.URL, str("action", "params", "url"))
		}
	case ActionScaleDown:
		selectors, _, _ := unstructured.NestedSlice(raw, "action", "params", "selectors")
		if len(p.Action.Selectors) != len(selectors) {
			t.Fatalf("%d selectors, want %d", len(p.Action.Selectors), len(selectors))
		}
		for i, sel := range selectors {
			kind, _, _ := unstructured.NestedString(sel.(map[string]any), "kind")
			labels, _, _ := unstructured.NestedStringMap(sel.(map[string]any), "labels")
			if len(labels) == 0 {
				labels = nil
			}
			got := p.Action.Selectors[i]
			if !strings.EqualFold(got.Kind, kind) || (got.Kind != KindDeployment && got.Kind != KindStatefulSet) || !maps.Equal(got.Labels, labels) {
				t.Errorf("selector %d = %+v, want kind %q labels %v", i, got, kind, labels)
			}
		}
	}
}

// readManagers returns the NamespaceManagers of a multi-document YAML file,
// decoded as a client decodes them.
func readManagers(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []*unstructured.Unstructured
	r := yaml.NewYAMLReader(bufio.NewReader(f))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("read %s: %v", path, err)
		}
		data, err := yaml.ToJSON(doc)
		if err != nil {
			t.Fatalf("convert %s: %v", path, err)
		}
		if strings.TrimSpace(string(data)) == "null" {
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(data); err != nil {
			t.Fatalf("decode %s: %v", path, err)
		}
		if obj.GetKind() == Kind {
			out = append(out, obj)
		}
	}
}

// namespaceSelector sets spec.namespaceSelector, which makes the manager a
// rule.
func namespaceSelector(sel any) func(map[string]any) {
	return set(sel, "spec", "namespaceSelector")
}

// namePatterns sets spec.namePatterns, which makes the manager a rule.
func namePatterns(patterns ...any) func(map[string]any) {
	return set(patterns, "spec", "namePatterns")
}

// ciE2E is a selector of namespaces labelled ci=e2e.
var ciE2E = map[string]any{"matchLabels": map[string]any{"ci": "e2e"}}

// selectorText shows a rule's selector for comparison: its canonical
// string, or what a nil or empty one means.
func selectorText(sel labels.Selector) string {
	switch {
	case sel == nil:
		return "<none>"
	case sel.Empty():
		return "<every namespace>"
	}
	return sel.String()
}

// checkParsedRule fails t unless Parse accepted obj as a rule with the
// selector (as selectorText shows it) and patterns given, no single target,
// and otherwise as want.
func checkParsedRule(t *testing.T, obj *unstructured.Unstructured, want Manager, selector string, patterns []string) {
	t.Helper()
	got, errs := Parse(obj)
	if len(errs) != 0 {
		t.Fatalf("Parse() errors = %v, want none", errs)
	}
	if got.Rule == nil {
		t.Fatalf("Parse() = %+v, want a rule", got)
	}
	if s := selectorText(got.Rule.Selector); s != selector {
		t.Errorf("Rule.Selector = %s, want %s", s, selector)
	}
	if !slices.Equal(got.Rule.Patterns, patterns) {
		t.Errorf("Rule.Patterns = %q, want %q", got.Rule.Patterns, patterns)
	}
	if target := got.Target(); target != "" {
		t.Errorf("Target() = %q, want none for a rule", target)
	}
	got.Rule = nil
	if !reflect.DeepEqual(normalized(got), normalized(want)) {
		t.Errorf("Parse() =\n%+v\nwant\n%+v", normalized(got), normalized(want))
	}
}

func TestParseRule(t *testing.T) {
	tests := []struct {
		name     string
		obj      *unstructured.Unstructured
		want     Manager
		selector string
		patterns []string
	}{
		{
			name:     "selector only",
			obj:      manager(namespaceSelector(ciE2E)),
			want:     wantManager(),
			selector: "ci=e2e",
		},
		{
			name: "selector with every operator",
			obj: manager(namespaceSelector(map[string]any{
				"matchLabels": map[string]any{"ci": "e2e"},
				"matchExpressions": []any{
					map[string]any{"key": "team", "operator": "In", "values": []any{"qa", "web"}},
					map[string]any{"key": "stage", "operator": "NotIn", "values": []any{"prod"}},
					map[string]any{"key": "pipeline", "operator": "Exists"},
					map[string]any{"key": "keep", "operator": "DoesNotExist", "values": []any{}},
				},
			})),
			want:     wantManager(),
			selector: "ci=e2e,!keep,pipeline,stage notin (prod),team in (qa,web)",
		},
		{
			name:     "patterns only",
			obj:      manager(namePatterns("e2e-*", "pr-[0-9]*")),
			want:     wantManager(),
			selector: "<none>",
			patterns: []string{"e2e-*", "pr-[0-9]*"},
		},
		{
			name:     "patterns in every form path.Match knows",
			obj:      manager(namePatterns("*", "e2e-??", "[^a-z]*", `[a-c\-]x`, `\*`, `run-[\]]`, "e2e-]")),
			want:     wantManager(),
			selector: "<none>",
			patterns: []string{"*", "e2e-??", "[^a-z]*", `[a-c\-]x`, `\*`, `run-[\]]`, "e2e-]"},
		},
		{
			name:     "selector and patterns",
			obj:      manager(namespaceSelector(ciE2E), namePatterns("e2e-*")),
			want:     wantManager(),
			selector: "ci=e2e",
			patterns: []string{"e2e-*"},
		},
		{
			name:     "null selector beside patterns",
			obj:      manager(namespaceSelector(nil), namePatterns("e2e-*")),
			want:     wantManager(),
			selector: "<none>",
			patterns: []string{"e2e-*"},
		},
		{
			name:     "empty spec.namespace beside a rule",
			obj:      manager(set("", "spec", "namespace"), namespaceSelector(ciE2E)),
			want:     wantManager(),
			selector: "ci=e2e",
		},
		{
			name:     "the name of a rule names no namespace, so need not be a DNS label",
			obj:      manager(set("leftovers.e2e", "metadata", "name"), set("namespace-manager", "metadata", "namespace"), namePatterns("e2e-*")),
			want:     wantManager(func(m *Manager) { m.Name, m.Namespace = "leftovers.e2e", "namespace-manager" }),
			selector: "<none>",
			patterns: []string{"e2e-*"},
		},
		{
			name:     "a deactivated rule",
			obj:      manager(set(true, "spec", "deactivated"), namespaceSelector(ciE2E)),
			want:     wantManager(func(m *Manager) { m.Deactivated = true }),
			selector: "ci=e2e",
		},
		{
			name:     "64 patterns of 253 characters",
			obj:      manager(namePatterns(slices.Repeat([]any{strings.Repeat("e", 252) + "*"}, 64)...)),
			want:     wantManager(),
			selector: "<none>",
			patterns: slices.Repeat([]string{strings.Repeat("e", 252) + "*"}, 64),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkParsedRule(t, tt.obj, tt.want, tt.selector, tt.patterns)
		})
	}
}

func TestParseRuleRejects(t *testing.T) {
	const (
		sel = "spec.namespaceSelector"
		pat = "spec.namePatterns"
	)
	expression := func(expr map[string]any) func(map[string]any) {
		return namespaceSelector(map[string]any{"matchExpressions": []any{expr}})
	}
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		want []fieldErr
	}{
		// A rule names no single namespace.
		{name: "selector and spec.namespace", obj: manager(namespaceSelector(ciE2E), set("e2e-1", "spec", "namespace")), want: []fieldErr{forbidden("spec.namespace")}},
		{name: "patterns and spec.namespace", obj: manager(namePatterns("e2e-*"), set("e2e-1", "spec", "namespace")), want: []fieldErr{forbidden("spec.namespace")}},
		{
			name: "a rule's spec.namespace is forbidden, not checked as a label",
			obj:  manager(namePatterns("e2e-*"), set("Not A Label", "spec", "namespace")),
			want: []fieldErr{forbidden("spec.namespace")},
		},

		// An empty selector, as pruning leaves one with a misspelt field.
		{name: "empty selector", obj: manager(namespaceSelector(map[string]any{})), want: []fieldErr{required(sel)}},
		{name: "empty matchLabels", obj: manager(namespaceSelector(map[string]any{"matchLabels": map[string]any{}})), want: []fieldErr{required(sel)}},

		// namePatterns.
		{name: "unclosed class", obj: manager(namePatterns("e2e-[")), want: []fieldErr{invalid(pat + "[0]")}},
		{name: "range without an end", obj: manager(namePatterns("[a-]")), want: []fieldErr{invalid(pat + "[0]")}},
		{name: "trailing backslash", obj: manager(namePatterns(`e2e-\`)), want: []fieldErr{invalid(pat + "[0]")}},
		{name: "empty class", obj: manager(namePatterns("[]a]")), want: []fieldErr{invalid(pat + "[0]")}},
		{name: "negated empty class", obj: manager(namePatterns("[^]")), want: []fieldErr{invalid(pat + "[0]")}},
		{name: "bad pattern after good ones", obj: manager(namePatterns("e2e-*", "pr-*", "[z")), want: []fieldErr{invalid(pat + "[2]")}},
		{name: "empty list", obj: manager(namePatterns()), want: []fieldErr{required(pat)}},
		{name: "empty pattern", obj: manager(namePatterns("")), want: []fieldErr{required(pat + "[0]")}},
		{name: "a pattern that is a number", obj: manager(namePatterns("e2e-*", int64(42))), want: []fieldErr{invalid(pat + "[1]")}},
		{name: "a pattern that is a list", obj: manager(namePatterns([]any{"e2e-*"})), want: []fieldErr{invalid(pat + "[0]")}},
		{name: "patterns a string", obj: manager(set("e2e-*", "spec", "namePatterns")), want: []fieldErr{invalid(pat)}},
		{name: "65 patterns", obj: manager(namePatterns(slices.Repeat([]any{"e2e-*"}, 65)...)), want: []fieldErr{tooMany(pat)}},
		{name: "pattern of 254 characters", obj: manager(namePatterns(strings.Repeat("e", 253) + "*")), want: []fieldErr{tooLong(pat + "[0]")}},

		// spec.enforce.
		{name: "enforce on a manager of one namespace", obj: manager(set(true, "spec", "enforce")), want: []fieldErr{forbidden("spec.enforce")}},
		{name: "enforce false on a manager of one namespace", obj: manager(set(false, "spec", "enforce")), want: []fieldErr{forbidden("spec.enforce")}},
		{name: "enforce a string", obj: manager(namePatterns("e2e-*"), set("true", "spec", "enforce")), want: []fieldErr{invalid("spec.enforce")}},

		// namespaceSelector.
		{name: "selector a string", obj: manager(namespaceSelector("ci=e2e")), want: []fieldErr{invalid(sel)}},
		{name: "selector a list", obj: manager(namespaceSelector([]any{ciE2E})), want: []fieldErr{invalid(sel)}},
		{name: "selector with an unknown field", obj: manager(namespaceSelector(map[string]any{"matchLabel": map[string]any{"ci": "e2e"}})), want: []fieldErr{invalid(sel)}},
		{name: "matchLabels value a number", obj: manager(namespaceSelector(map[string]any{"matchLabels": map[string]any{"run": int64(42)}})), want: []fieldErr{invalid(sel)}},
		{name: "matchLabels value not a label value", obj: manager(namespaceSelector(map[string]any{"matchLabels": map[string]any{"ci": "e2e tests"}})), want: []fieldErr{invalid(sel + ".matchLabels")}},
		{name: "matchLabels key not a label name", obj: manager(namespaceSelector(map[string]any{"matchLabels": map[string]any{"ci run": "e2e"}})), want: []fieldErr{invalid(sel + ".matchLabels")}},
		{name: "unknown operator", obj: manager(expression(map[string]any{"key": "ci", "operator": "Equals", "values": []any{"e2e"}})), want: []fieldErr{invalid(sel + ".matchExpressions[0].operator")}},
		{name: "operator in lower case", obj: manager(expression(map[string]any{"key": "ci", "operator": "in", "values": []any{"e2e"}})), want: []fieldErr{invalid(sel + ".matchExpressions[0].operator")}},
		{name: "In without values", obj: manager(expression(map[string]any{"key": "ci", "operator": "In"})), want: []fieldErr{required(sel + ".matchExpressions[0].values")}},
		{name: "NotIn with empty values", obj: manager(expression(map[string]any{"key": "ci", "operator": "NotIn", "values": []any{}})), want: []fieldErr{required(sel + ".matchExpressions[0].values")}},
		{name: "Exists with values", obj: manager(expression(map[string]any{"key": "ci", "operator": "Exists", "values": []any{"e2e"}})), want: []fieldErr{forbidden(sel + ".matchExpressions[0].values")}},
		{name: "expression key not a label name", obj: manager(expression(map[string]any{"key": "ci/", "operator": "Exists"})), want: []fieldErr{invalid(sel + ".matchExpressions[0].key")}},
		{name: "expression value not a label value", obj: manager(expression(map[string]any{"key": "ci", "operator": "In", "values": []any{"e2e tests"}})), want: []fieldErr{invalid(sel + ".matchExpressions[0].values[0]")}},

		// Every problem at once.
		{
			name: "bad selector, bad pattern, spec.namespace and a bad policy",
			obj: manager(
				expression(map[string]any{"key": "ci", "operator": "In"}),
				namePatterns("e2e-[", "ok-*", ""),
				set("e2e-1", "spec", "namespace"),
				set("KILL", "spec", "policies", "0", "action", "type"),
			),
			want: []fieldErr{
				required(sel + ".matchExpressions[0].values"),
				invalid(pat + "[0]"),
				required(pat + "[2]"),
				forbidden("spec.namespace"),
				notSupported("spec.policies[0].action.type"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkRejected(t, tt.obj, tt.want)
		})
	}
}

func TestParseTarget(t *testing.T) {
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		want string
	}{
		{name: "spec.namespace", obj: manager(set("e2e-run-2", "spec", "namespace"), set("cleanup-for-run-2", "metadata", "name")), want: "e2e-run-2"},
		{name: "the manager's name, not its namespace", obj: manager(set("cleanup-for-run-2", "metadata", "name"), set("namespace-manager", "metadata", "namespace")), want: "cleanup-for-run-2"},
		{name: "empty spec.namespace", obj: manager(set("", "spec", "namespace"), set("e2e-7", "metadata", "name")), want: "e2e-7"},
		{name: "a rule has no single target", obj: manager(namePatterns("e2e-*"), set("e2e-leftovers", "metadata", "name")), want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, errs := Parse(tt.obj)
			if len(errs) != 0 {
				t.Fatalf("Parse() errors = %v", errs)
			}
			if got := m.Target(); got != tt.want {
				t.Errorf("Target() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestManagerTarget(t *testing.T) {
	tests := []struct {
		name string
		m    Manager
		want string
	}{
		{name: "spec.namespace wins", m: Manager{Namespace: "ns", Name: "name", TargetNamespace: "target"}, want: "target"},
		{name: "name without spec.namespace", m: Manager{Namespace: "ns", Name: "name"}, want: "name"},
		{name: "a rule, whatever its name and spec.namespace", m: Manager{Namespace: "ns", Name: "name", TargetNamespace: "target", Rule: &Rule{}}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.m.Target(); got != tt.want {
				t.Errorf("Target() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestParseLeavesObjectAlone guards the object a sweep later patches: Parse
// must not default or normalize fields in place.
func TestParseLeavesObjectAlone(t *testing.T) {
	obj := manager(policies(
		podsPolicy("pods", set(map[string]any{"podLabels": map[string]any{"n": int64(1)}}, "condition", "params")),
		ttlPolicy("ttl", del("condition", "params")),
		ttlPolicy("scale", set(map[string]any{"type": ActionScaleDown, "params": map[string]any{
			"selectors": []any{map[string]any{"kind": "deployment"}},
		}}, "action")),
	))
	before := obj.DeepCopy()
	if _, errs := Parse(obj); len(errs) != 0 {
		t.Fatalf("Parse() errors = %v", errs)
	}
	if !reflect.DeepEqual(obj, before) {
		t.Errorf("Parse() changed the object:\n%v\nwas\n%v", obj.Object, before.Object)
	}
}

// A manager may hold anything up to etcd's object size; what its problems
// repeat of it stays small.
func TestParseProblemsAreBounded(t *testing.T) {
	huge := strings.Repeat("ä", 1<<19) // 1 MiB of two-byte runes
	tests := map[string]*unstructured.Unstructured{
		"huge label value": manager(set(map[string]any{"type": ConditionPodsSucceed, "params": map[string]any{"podLabels": map[string]any{"role": huge}}},
			"spec", "policies", "0", "condition")),
		"huge label name": manager(set(map[string]any{"type": ConditionPodsSucceed, "params": map[string]any{"podLabels": map[string]any{huge: "x"}}},
			"spec", "policies", "0", "condition")),
		"huge url":            manager(set(map[string]any{"type": ActionWebhook, "params": map[string]any{"url": "ftp://" + huge}}, "spec", "policies", "0", "action")),
		"huge spec":           {Object: map[string]any{"kind": Kind, "metadata": map[string]any{"name": "x", "namespace": "x"}, "spec": huge}},
		"huge condition type": manager(set(huge, "spec", "policies", "0", "condition", "type")),
		"huge object as type": manager(set(map[string]any{"a": huge, "b": huge}, "spec", "policies", "0", "condition", "type")),
		"huge name pattern":   manager(namePatterns("[" + huge)),
		"huge selector value": manager(namespaceSelector(map[string]any{"matchLabels": map[string]any{"ci": huge}})),
		"huge selector":       manager(namespaceSelector(huge)),
	}
	for name, obj := range tests {
		t.Run(name, func(t *testing.T) {
			_, problems := Parse(obj)
			if len(problems) == 0 {
				t.Fatal("no problem reported")
			}
			for _, p := range problems {
				if msg := p.Error(); len(msg) > 1024 || !utf8.ValidString(msg) {
					t.Errorf("problem of %d bytes (valid UTF-8: %v): %.200s", len(msg), utf8.ValidString(msg), msg)
				}
			}
		})
	}
}

// Arming tells specs apart, but not specs that differ in spec.deactivated
// alone: pausing and resuming a rule re-arms none of its namespaces.
func TestArming(t *testing.T) {
	parse := func(obj *unstructured.Unstructured) string {
		t.Helper()
		m, errs := Parse(obj)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		if m.Arming == "" {
			t.Fatal("no Arming")
		}
		return m.Arming
	}
	base := parse(manager())
	if paused := parse(manager(set(true, "spec", "deactivated"))); paused != base {
		t.Errorf("spec.deactivated changed Arming: %s, was %s", paused, base)
	}
	if edited := parse(manager(policies(ttlPolicy("another name")))); edited == base {
		t.Error("an edited policy kept Arming")
	}
}

// spec.enforce makes a rule act on namespaces a manager of their own
// governs; it is read for rules only, and toggling it re-arms nothing.
func TestParseRuleEnforce(t *testing.T) {
	for _, tt := range []struct {
		name string
		obj  *unstructured.Unstructured
		want bool
	}{
		{"absent", manager(namePatterns("e2e-*")), false},
		{"false", manager(namePatterns("e2e-*"), set(false, "spec", "enforce")), false},
		{"true", manager(namePatterns("e2e-*"), set(true, "spec", "enforce")), true},
		{"true, by selector", manager(namespaceSelector(ciE2E), set(true, "spec", "enforce")), true},
	} {
		m, errs := Parse(tt.obj)
		if len(errs) > 0 || m.Rule == nil {
			t.Fatalf("%s: Parse() = %+v, %v; want a rule", tt.name, m.Rule, errs)
		}
		if m.Rule.Enforce != tt.want {
			t.Errorf("%s: Enforce = %t, want %t", tt.name, m.Rule.Enforce, tt.want)
		}
	}
	plain, _ := Parse(manager(namePatterns("e2e-*")))
	enforcing, _ := Parse(manager(namePatterns("e2e-*"), set(true, "spec", "enforce")))
	if plain.Arming != enforcing.Arming {
		t.Errorf("spec.enforce changed Arming: %s, was %s", enforcing.Arming, plain.Arming)
	}
}

// ParseStrict refuses, beside what Parse refuses, what nsman's CRD refuses
// at admission: its bounds, every declared parameter whatever the type, and
// label values that are not strings. Parse accepts each of these, as a
// sweep must under the original CRD.
func TestParseStrict(t *testing.T) {
	many := func(n int, item func(i int) any) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = item(i)
		}
		return out
	}
	labels := func(n int) map[string]any {
		out := map[string]any{}
		for i := range n {
			out[fmt.Sprint("l", i)] = "v"
		}
		return out
	}
	const p0 = "spec.policies[0]"
	for _, tt := range []struct {
		name   string
		mutate func(map[string]any)
		want   []fieldErr
	}{
		{"65 policies", policies(many(65, func(i int) any { return ttlPolicy(fmt.Sprint("delete after ", i)) })...), []fieldErr{tooMany("spec.policies")}},
		{"65 podLabels", set(labels(65), "spec", "policies", "0", "condition", "params", "podLabels"), []fieldErr{tooMany(p0 + ".condition.params.podLabels")}},
		{"a podLabels value a number", policies(podsPolicy("check", set(map[string]any{"role": int64(1)}, "condition", "params", "podLabels"))), []fieldErr{invalid(p0 + ".condition.params.podLabels[role]")}},
		{"minChecks 0 on a TTL condition", set(int64(0), "spec", "policies", "0", "condition", "params", "minChecks"), []fieldErr{invalid(p0 + ".condition.params.minChecks")}},
		{"periodSeconds a string on a TTL condition", set("10", "spec", "policies", "0", "condition", "params", "periodSeconds"), []fieldErr{invalid(p0 + ".condition.params.periodSeconds")}},
		{"an ftp url on a DELETE action", set(map[string]any{"url": "ftp://x"}, "spec", "policies", "0", "action", "params"), []fieldErr{invalid(p0 + ".action.params.url")}},
		{"17 selectors on a DELETE action", set(map[string]any{"selectors": many(17, func(int) any { return map[string]any{"kind": "Deployment"} })}, "spec", "policies", "0", "action", "params"), []fieldErr{tooMany(p0 + ".action.params.selectors")}},
		{"17 selectors on a SLEEP action", set(map[string]any{"type": ActionSleep, "params": map[string]any{"selectors": many(17, func(int) any { return map[string]any{"kind": "CronJob"} })}}, "spec", "policies", "0", "action"), []fieldErr{tooMany(p0 + ".action.params.selectors")}},
		{"a url a number on a SLEEP action", set(map[string]any{"type": ActionSleep, "params": map[string]any{"url": int64(1)}}, "spec", "policies", "0", "action"), []fieldErr{invalid(p0 + ".action.params.url")}},
		{"replicas on a DELETE action", set(map[string]any{"type": ActionDelete, "params": map[string]any{"replicas": int64(1)}}, "spec", "policies", "0", "action"), []fieldErr{invalid(p0 + ".action.params.replicas")}},
		{"loadBalancers on a DELETE action", set(map[string]any{"type": ActionDelete, "params": map[string]any{"loadBalancers": true}}, "spec", "policies", "0", "action"), []fieldErr{invalid(p0 + ".action.params.loadBalancers")}},
		{"patches on a WEBHOOK action", set(map[string]any{"type": ActionWebhook, "params": map[string]any{"url": "https://hooks.example.com/x", "patches": []any{map[string]any{"kind": "HelmRelease.helm.toolkit.fluxcd.io", "patch": map[string]any{"spec": map[string]any{"suspend": true}}}}}}, "spec", "policies", "0", "action"), []fieldErr{invalid(p0 + ".action.params.patches")}},
		{"patches of status on a DELETE action", set(map[string]any{"type": ActionDelete, "params": map[string]any{"patches": []any{map[string]any{"kind": "HelmRelease.helm.toolkit.fluxcd.io", "patch": map[string]any{"status": nil}}}}}, "spec", "policies", "0", "action"), []fieldErr{forbidden(p0 + ".action.params.patches[0].patch.status")}},
		{"replicas -1 on a WEBHOOK action", set(map[string]any{"type": ActionWebhook, "params": map[string]any{"url": "https://hooks.example.com/x", "replicas": int64(-1)}}, "spec", "policies", "0", "action"), []fieldErr{invalid(p0 + ".action.params.replicas")}},
		{"via owner on a SCALE_DOWN action", set(map[string]any{"type": ActionScaleDown, "params": map[string]any{"via": "owner"}}, "spec", "policies", "0", "action"), []fieldErr{invalid(p0 + ".action.params.via")}},
		{"a url of 2049 characters", policies(ttlPolicy("report", set(map[string]any{"type": ActionWebhook, "params": map[string]any{"url": "https://hooks.example.com/" + strings.Repeat("x", 2049-26)}}, "action"))), []fieldErr{tooLong(p0 + ".action.params.url")}},
	} {
		obj := manager(tt.mutate)
		if _, errs := Parse(obj); len(errs) > 0 {
			t.Errorf("%s: Parse() = %v, want it accepted (a sweep takes it)", tt.name, errs)
		}
		_, errs := ParseStrict(obj)
		if got, want := fieldErrs(errs), sortedErrs(tt.want); !reflect.DeepEqual(got, want) || len(errs) != len(want) {
			t.Errorf("%s: ParseStrict() errors = %v, want %v, each once\nfull errors: %v", tt.name, got, want, errs)
		}
	}
	// At the bounds, and with nothing beyond Parse, it accepts what Parse does.
	for _, obj := range []*unstructured.Unstructured{
		manager(),
		manager(policies(many(64, func(i int) any { return ttlPolicy(fmt.Sprint("delete after ", i)) })...)),
		manager(set(labels(64), "spec", "policies", "0", "condition", "params", "podLabels")),
	} {
		if _, errs := ParseStrict(obj); len(errs) > 0 {
			t.Errorf("ParseStrict() = %v, want it accepted", errs)
		}
	}
}
