package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/nsman/nsman/policy/patch"
	"github.com/nsman/nsman/policy/traffic"
	"github.com/nsman/nsman/policy/window"
)

// The fuzz targets start from the project's own valid managers, so that
// mutations reach evaluation rather than stopping at the decoder:
// FuzzParseAndEvaluate mutates their JSON, FuzzEvaluateManager mutates one
// field of one of them at a time and the input evaluated.

// fuzzCreated is the target namespace's creationTimestamp in the fuzz targets.
var fuzzCreated = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// extraManagers are valid managers that examples/ does not show: rules by
// selector and by name patterns, stages, PODS_FAILED, minChecks, label
// values that are numbers, the bounds of a duration, whole numbers spelled
// as floats, a hold (which Parse leaves to the sweep), a deactivated
// manager, SLEEP policies in windows, idle, on pods, before and after a
// DELETE, windows on dates, patches of a SLEEP.
var extraManagers = []string{
	`{"apiVersion":"k8s.consol.de/v1beta1","kind":"NamespaceManager","metadata":{"name":"failed-e2e","namespace":"namespace-manager","uid":"u-1","generation":3},"spec":{"namespaceSelector":{"matchExpressions":[{"key":"ci","operator":"In","values":["e2e","smoke"]},{"key":"keep","operator":"DoesNotExist"}]},"policies":[{"name":"report a failure","final":false,"condition":{"type":"PODS_FAILED","params":{"podLabels":{"role":"e2e"},"initialDelaySeconds":0}},"action":{"type":"WEBHOOK","params":{"url":"https://hooks.example.com/nsman"}}},{"name":"delete after a day","condition":{"type":"TTL","params":{"ttlSeconds":86400}},"action":{"type":"DELETE"}}]}}`,
	`{"metadata":{"name":"previews","namespace":"namespace-manager","generation":1},"spec":{"namePatterns":["pr-[0-9]*","preview-?","e2e-\\*"],"policies":[{"name":"park it","final":false,"condition":{"type":"TTL","params":{"ttlSeconds":3600}},"action":{"type":"SCALE_DOWN","params":{"selectors":[{"kind":"StatefulSet"},{"kind":"deployment","labels":{"tier":"web"}}]}}},{"name":"delete it","final":true,"condition":{"type":"TTL","params":{"ttlSeconds":7200}},"action":{"type":"DELETE"}}]}}`,
	`{"metadata":{"name":"both","namespace":"namespace-manager"},"spec":{"namespaceSelector":{"matchLabels":{"ci":"e2e"}},"namePatterns":["e2e-*"],"policies":[{"name":"when the pods pass","condition":{"type":"PODS_SUCCEED","params":{"initialDelaySeconds":60,"periodSeconds":10}},"action":{"type":"DELETE"}}]}}`,
	`{"metadata":{"name":"ci-7","namespace":"ci-7","generation":2},"spec":{"policies":[{"name":"when tests pass","condition":{"type":"PODS_SUCCEED","params":{"podLabels":{"role":"e2e","run":7,"gate":true},"initialDelaySeconds":30,"periodSeconds":10,"minChecks":3}},"action":{"type":"DELETE"}},{"name":"tell on failure","final":false,"condition":{"type":"PODS_FAILED","params":{"podLabels":{"role":"e2e"}}},"action":{"type":"WEBHOOK","params":{"url":"http://receiver.namespace-manager.svc:8080/x"}}},{"name":"backstop","condition":{"type":"TTL","params":{"ttlSeconds":7200}},"action":{"type":"DELETE"}}]}}`,
	`{"metadata":{"name":"m","namespace":"namespace-manager"},"spec":{"namespace":"target-1","deactivated":true,"policies":[{"name":"delete at once","condition":{"type":"TTL","params":{"ttlSeconds":0}},"action":{"type":"DELETE"}}]}}`,
	`{"metadata":{"name":"far"},"spec":{"policies":[{"name":"the far end","condition":{"type":"PODS_SUCCEED","params":{"initialDelaySeconds":2147483647,"periodSeconds":2147483647,"minChecks":2147483647}},"action":{"type":"DELETE"}},{"name":"no sooner","condition":{"type":"TTL","params":{"ttlSeconds":2147483647}},"action":{"type":"DELETE"}}]}}`,
	`{"metadata":{"name":"floats","namespace":"floats"},"spec":{"policies":[{"name":"when tests pass","condition":{"type":"PODS_SUCCEED","params":{"podLabels":{"run":7.0},"initialDelaySeconds":3e1,"periodSeconds":10.0,"minChecks":2.0}},"action":{"type":"DELETE"}},{"name":"backstop","condition":{"type":"TTL","params":{"ttlSeconds":7.2e3}},"action":{"type":"DELETE"}}]}}`,
	`{"metadata":{"name":"sleepy","namespace":"namespace-manager","generation":4},"spec":{"namePatterns":["dev-*"],"policies":[{"name":"nights and weekends","condition":{"type":"TTL","params":{"ttlSeconds":0}},"action":{"type":"SLEEP","params":{"selectors":[{"kind":"Deployment"},{"kind":"cronjob","labels":{"tier":"batch"}}]}},"windows":[{"from":"20:00","to":"07:00","timeZone":"Europe/Berlin"},{"days":["Sat","Sun"],"from":"07:00","to":"20:00","timeZone":"Europe/Berlin"}]},{"name":"when idle","condition":{"type":"IDLE","params":{"idleSeconds":3600}},"action":{"type":"SLEEP"}},{"name":"delete when stale","condition":{"type":"IDLE","params":{"idleSeconds":604800}},"action":{"type":"DELETE"}}]}}`,
	`{"metadata":{"name":"sleep-late","generation":1},"spec":{"policies":[{"name":"backstop","condition":{"type":"TTL","params":{"ttlSeconds":86400}},"action":{"type":"DELETE"}},{"name":"sleep when pods pass","final":false,"condition":{"type":"PODS_SUCCEED","params":{"initialDelaySeconds":0,"minChecks":2}},"action":{"type":"SLEEP"},"windows":[{"from":"22:00","to":"06:00"}]},{"name":"sleep on failure","condition":{"type":"PODS_FAILED","params":{"initialDelaySeconds":0}},"action":{"type":"SLEEP"}}]}}`,
	`{"metadata":{"name":"holidays","namespace":"namespace-manager","generation":2},"spec":{"namePatterns":["dev-*"],"policies":[{"name":"nights and holidays","condition":{"type":"TTL","params":{"ttlSeconds":0}},"action":{"type":"SLEEP"},"windows":[{"from":"20:00","to":"07:00","timeZone":"Europe/Berlin"},{"dates":["2026-01-01","2026-03-27..2026-03-30","2026-12-24..2027-01-01"],"timeZone":"Europe/Berlin"}]},{"name":"on holiday weekends","condition":{"type":"TTL","params":{"ttlSeconds":3600}},"action":{"type":"SCALE_DOWN"},"windows":[{"dates":["2025-12-20..2026-01-10"],"days":["Sat","Sun"],"from":"09:00","to":"17:00"}]}]}}`,
	`{"metadata":{"name":"flux","namespace":"flux"},"spec":{"policies":[{"name":"nights","condition":{"type":"TTL","params":{"ttlSeconds":0}},"action":{"type":"SLEEP","params":{"loadBalancers":true,"patches":[{"kind":"HelmRelease.helm.toolkit.fluxcd.io","labels":{"tier":"web"},"patch":{"spec":{"suspend":true},"metadata":{"annotations":{"example.com/asleep":"yes","example.com/old":null}}}},{"kind":"Kustomization.kustomize.toolkit.fluxcd.io","patch":{"spec":{"suspend":true,"interval":"1h","retries":3,"ratio":0.5,"list":[1,"a",null]}}}]}},"windows":[{"from":"20:00","to":"07:00","timeZone":"Europe/Berlin"}]}]}}`,
	`{"metadata":{"name":"held","namespace":"held","annotations":{"nsman.k8s.consol.de/hold-until":"2026-01-02T00:00:00Z"}},"spec":{"policies":[{"name":"delete at once","condition":{"type":"TTL","params":{"ttlSeconds":0}},"action":{"type":"DELETE"}}]}}`,
}

// hostileManagers are seeds that do not parse: wrong types, out of range,
// broken rules.
var hostileManagers = []string{
	`{"spec":{"policies":{}}}`,
	`{"spec":"x"}`,
	`{"spec":{"deactivated":"yes","policies":[1,"a",null,{"name":5}]}}`,
	`{"spec":{"policies":[{"name":"p p","condition":{"type":"TTL","params":{"ttlSeconds":1e300}},"action":{"type":"DELETE"}}]}}`,
	`{"spec":{"policies":[{"name":"p p","condition":{"type":"PODS_SUCCEED","params":{"minChecks":2147483648,"periodSeconds":0,"initialDelaySeconds":-1}},"action":{"type":"DELETE"}}]}}`,
	`{"kind":"Other","spec":{"namespaceSelector":{},"namePatterns":["[a-",""],"namespace":"x","policies":[{"name":"x"}]}}`,
	`{"metadata":{"name":"r"},"spec":{"namespaceSelector":{"matchExpressions":[{"key":"a","operator":"Bogus"}]},"policies":[{"name":"p p","condition":{"type":"TTL"},"action":{"type":"WEBHOOK","params":{"url":"ftp://user:pw@h/"}}}]}}`,
}

// validManagers returns every NamespaceManager of examples/ and
// extraManagers, as JSON, each checked to parse without problems.
func validManagers(tb testing.TB) [][]byte {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join("..", "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no examples: %v", err)
	}
	var out [][]byte
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var raw json.RawMessage
			if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				tb.Fatalf("%s: %v", file, err)
			}
			var head struct{ Kind string }
			if json.Unmarshal(raw, &head) == nil && head.Kind == Kind {
				out = append(out, raw)
			}
		}
	}
	if len(out) < len(files) {
		tb.Fatalf("%d managers in %d example files", len(out), len(files))
	}
	for _, s := range extraManagers {
		out = append(out, []byte(s))
	}
	for _, data := range out {
		if _, problems := Parse(decode(data)); len(problems) > 0 {
			tb.Fatalf("seed manager does not parse: %v\n%s", problems, data)
		}
	}
	return out
}

// decode reads a manager as the sweep and nsman validate do: apimachinery's
// JSON, integers as int64. Nil when data is no JSON object.
func decode(data []byte) *unstructured.Unstructured {
	var obj map[string]any
	if err := utiljson.Unmarshal(data, &obj); err != nil || obj == nil {
		return nil
	}
	return &unstructured.Unstructured{Object: obj}
}

// FuzzParseAndEvaluate feeds arbitrary JSON to Parse, as a manager stored
// under the original CRD may hold anything, and evaluates whatever parses.
// Neither may panic; problems are bounded and name their field; a manager
// that parses without problems is well-formed, parses the same after a JSON
// round trip, and evaluates as checkEvaluation requires; at an odd offset,
// asleep by its first SLEEP policy.
func FuzzParseAndEvaluate(f *testing.F) {
	for _, m := range validManagers(f) {
		f.Add(m, int64(0))
		f.Add(m, int64(90000))
		f.Add(m, int64(90001)) // asleep
	}
	for _, s := range hostileManagers {
		f.Add([]byte(s), int64(3600))
	}
	f.Fuzz(func(t *testing.T, data []byte, offset int64) {
		u := decode(data)
		if u == nil {
			return
		}
		m, ok := checkParse(t, u)
		if !ok {
			return
		}
		in := Input{Now: fuzzCreated.Add(time.Duration(offset) * time.Second), TargetCreated: fuzzCreated}
		if i := slices.IndexFunc(m.Policies, func(p Policy) bool { return p.Action.Type == ActionSleep }); i >= 0 && offset%2 != 0 {
			in.Asleep = m.Policies[i].Name
		}
		checkEvaluation(t, m, in, uint16(offset))
	})
}

// FuzzEvaluateManager starts from a valid manager (base), sets one field
// of it (slot: which field of which policy) to a fuzzed number, string or
// bool, and evaluates it on a fuzzed input: the time, the pods checks'
// results, PODS_SUCCEED progress, the owner OWNER_GONE remembers gone and
// the one read (by last), the stages fired and the SLEEP policy the
// target is asleep by (asleep: 0 awake, else the name of policy asleep-1,
// modulo their number, or of none at 0xff). Most executions get past
// decoding and parsing into Evaluate.
func FuzzEvaluateManager(f *testing.F) {
	bases := validManagers(f)
	for i := range bases {
		for slot := range slots {
			f.Add(uint8(i), uint8(slot), int64(60), "e2e", true, int64(61_000), uint16(0), uint8(0), int64(0), uint8(0), uint8(0))
		}
		f.Add(uint8(i), uint8(0), int64(0), "", false, int64(0), uint16(0xffff), uint8(1), int64(55_000), uint8(1), uint8(1))
		// One check of minChecks passed 6s ago, one more due.
		f.Add(uint8(i), uint8(0), int64(60), "", false, int64(61_000), uint16(0), uint8(1), int64(55_000), uint8(0), uint8(2))
		f.Add(uint8(i), uint8(2), int64(MaxSeconds), "x", false, int64(1<<40), uint16(0x5555), uint8(2), int64(-1), uint8(0xff), uint8(0xff))
		f.Add(uint8(i), uint8(3), int64(MaxSeconds+1), "-", true, int64(-1), uint16(0xaaaa), uint8(9), int64(1<<40), uint8(2), uint8(3))
		// Asleep at noon UTC, outside the nights, and at 21:00 UTC.
		f.Add(uint8(i), uint8(7), int64(3), "", false, int64(12*3600_000), uint16(0), uint8(0), int64(0), uint8(0), uint8(1))
		f.Add(uint8(i), uint8(7), int64(3), "", false, int64(21*3600_000), uint16(0x5555), uint8(0), int64(0), uint8(0), uint8(2))
	}
	f.Fuzz(func(t *testing.T, base, slot uint8, n int64, s string, b bool, offset int64, pods uint16, passed uint8, last int64, fired, asleep uint8) {
		u := decode(bases[int(base)%len(bases)])
		slots[int(slot)%len(slots)](u.Object, int(slot)/len(slots), n, s, b)
		// Parse reads what a JSON decoder made: strings are UTF-8.
		data, err := json.Marshal(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		m, ok := checkParse(t, decode(data))
		if !ok {
			return
		}
		in := Input{
			Now:           time.UnixMilli(fuzzCreated.UnixMilli() + offset),
			TargetCreated: fuzzCreated,
		}
		for i, p := range m.Policies {
			if passed > 0 && p.Condition.Type == ConditionPodsSucceed {
				if in.Checks == nil {
					in.Checks = map[string]CheckState{}
				}
				gen := m.Generation
				if passed&0x80 != 0 {
					gen++ // progress of another spec
				}
				in.Checks[p.Name] = CheckState{Generation: gen, Passed: int(passed & 0x7f), Last: time.UnixMilli(fuzzCreated.UnixMilli() + last)}
			}
			if passed > 0 && p.Condition.Type == ConditionOwnerGone {
				if in.Checks == nil {
					in.Checks = map[string]CheckState{}
				}
				// An earlier sweep found the owner (another one, by the top
				// bit) gone at last.
				in.Checks[p.Name] = CheckState{Owner: fuzzOwner(passed & 0x80), GoneSince: time.UnixMilli(fuzzCreated.UnixMilli() + last).UTC()}
			}
			if i < 8 && fired&(1<<i) != 0 {
				if in.Fired == nil {
					in.Fired = map[string]bool{}
				}
				in.Fired[p.Name] = true
			}
		}
		if b {
			in.TargetTouched = s
		}
		// The owner read: unknown, present, gone, or none (nil).
		if presence := OwnerPresence(uint64(last) % 4); presence <= OwnerGone {
			in.Owner = &Owner{Ref: fuzzOwner(0), By: OwnerAnnotation, Presence: presence, Why: s}
		}
		switch asleep {
		case 0:
		case 0xff:
			in.Asleep = "a policy gone"
		default:
			in.Asleep = m.Policies[int(asleep-1)%len(m.Policies)].Name
		}
		checkEvaluation(t, m, in, pods)
	})
}

// fuzzOwner is the ref of an owner, another one when other is not 0.
func fuzzOwner(other uint8) string {
	if other != 0 {
		return "kustomizations.kustomize.toolkit.fluxcd.io/flux-system/pr-1"
	}
	return "applications.argoproj.io/argocd/pr-1"
}

// slots are the fields FuzzEvaluateManager sets, each on policy i (modulo
// their number) or on the spec: a number n, a string s or a bool b.
var slots = []func(obj map[string]any, i int, n int64, s string, b bool){
	func(obj map[string]any, i int, n int64, _ string, _ bool) { params(obj, i)["ttlSeconds"] = n },
	func(obj map[string]any, i int, n int64, _ string, _ bool) { params(obj, i)["initialDelaySeconds"] = n },
	func(obj map[string]any, i int, n int64, _ string, _ bool) { params(obj, i)["periodSeconds"] = n },
	func(obj map[string]any, i int, n int64, _ string, _ bool) { params(obj, i)["minChecks"] = n },
	func(obj map[string]any, i int, n int64, _ string, _ bool) {
		types := []string{ConditionTTL, ConditionPodsSucceed, ConditionPodsFailed, ConditionExpires, ConditionIdle, ConditionOwnerGone}
		policy(obj, i)["condition"].(map[string]any)["type"] = types[uint64(n)%uint64(len(types))]
	},
	func(obj map[string]any, i int, _ int64, s string, _ bool) { params(obj, i)["at"] = s },
	func(obj map[string]any, i int, n int64, s string, _ bool) {
		minutes := func(m uint64) string { return fmt.Sprintf("%02d:%02d", m%1440/60, m%60) }
		w := map[string]any{"from": minutes(uint64(n)), "to": minutes(uint64(n) >> 11), "days": []any{s}}
		policy(obj, i)["windows"] = []any{w}
	},
	func(obj map[string]any, i int, n int64, s string, b bool) {
		// Dates from the year before the target to two after, ranges up to
		// a few days past the bound; all day, or at night when b.
		u := uint64(n)
		first := fuzzCreated.AddDate(0, 0, int(u%1100)-365)
		last := first.AddDate(0, 0, int(u>>11%370))
		w := map[string]any{"dates": []any{first.Format(time.DateOnly) + ".." + last.Format(time.DateOnly), s}}
		if b {
			w["from"], w["to"] = "20:00", "07:00"
		}
		if u>>20%2 == 1 {
			w["days"] = []any{"Sat", "Sun"}
		}
		policy(obj, i)["windows"] = []any{w}
	},
	func(obj map[string]any, i int, n int64, s string, _ bool) {
		actions := []map[string]any{
			{"type": ActionDelete},
			{"type": ActionScaleDown, "params": map[string]any{"selectors": []any{map[string]any{"kind": s}}}},
			{"type": ActionWebhook, "params": map[string]any{"url": s}},
			{"type": ActionSleep, "params": map[string]any{"selectors": []any{map[string]any{"kind": s}}}},
			{"type": ActionSleep, "params": map[string]any{"patches": []any{map[string]any{"kind": s, "patch": map[string]any{"spec": map[string]any{"suspend": true}}}}}},
		}
		policy(obj, i)["action"] = actions[uint64(n)%uint64(len(actions))]
	},
	func(obj map[string]any, i int, _ int64, s string, _ bool) { policy(obj, i)["name"] = s },
	func(obj map[string]any, i int, _ int64, _ string, b bool) { policy(obj, i)["final"] = b },
	func(obj map[string]any, i int, n int64, s string, _ bool) {
		p := params(obj, i)
		labels, _ := p["podLabels"].(map[string]any)
		if labels == nil {
			labels = map[string]any{}
			p["podLabels"] = labels
		}
		labels[s] = strconv.FormatInt(n, 10)
	},
	func(obj map[string]any, i int, n int64, s string, b bool) {
		var v any = s
		if b {
			v = n // a number, as the original operator's JSON binding took it
		}
		params(obj, i)["podLabels"] = map[string]any{"role": v}
	},
	func(obj map[string]any, _ int, _ int64, s string, _ bool) {
		spec := obj["spec"].(map[string]any)
		delete(spec, "namespace")
		patterns, _ := spec["namePatterns"].([]any)
		spec["namePatterns"] = append(patterns, s)
	},
	func(obj map[string]any, _ int, n int64, s string, _ bool) {
		spec := obj["spec"].(map[string]any)
		delete(spec, "namespace")
		ops := []string{"In", "NotIn", "Exists", "DoesNotExist"}
		expr := map[string]any{"key": "ci", "operator": ops[uint64(n)%4]}
		if uint64(n)%4 < 2 {
			expr["values"] = []any{s}
		}
		spec["namespaceSelector"] = map[string]any{"matchLabels": map[string]any{"team": s}, "matchExpressions": []any{expr}}
	},
	func(obj map[string]any, _ int, _ int64, s string, _ bool) {
		spec := obj["spec"].(map[string]any)
		delete(spec, "namespaceSelector")
		delete(spec, "namePatterns")
		spec["namespace"] = s
	},
	func(obj map[string]any, _ int, _ int64, _ string, b bool) {
		obj["spec"].(map[string]any)["deactivated"] = b
	},
	func(obj map[string]any, _ int, n int64, s string, _ bool) {
		meta, _ := obj["metadata"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
			obj["metadata"] = meta
		}
		meta["name"], meta["generation"] = s, n
	},
	func(obj map[string]any, i int, _ int64, _ string, _ bool) {
		// The same policies in another order.
		list := obj["spec"].(map[string]any)["policies"].([]any)
		j := i % len(list)
		list[0], list[j] = list[j], list[0]
	},
	func(obj map[string]any, i int, n int64, _ string, _ bool) { params(obj, i)["idleSeconds"] = n },
	func(obj map[string]any, i int, n int64, _ string, _ bool) { params(obj, i)["graceSeconds"] = n },
}

// policy returns policy i (modulo their number) of a valid manager.
func policy(obj map[string]any, i int) map[string]any {
	list := obj["spec"].(map[string]any)["policies"].([]any)
	return list[i%len(list)].(map[string]any)
}

// params returns the condition's params of policy i, made if absent.
func params(obj map[string]any, i int) map[string]any {
	c := policy(obj, i)["condition"].(map[string]any)
	p, _ := c["params"].(map[string]any)
	if p == nil {
		p = map[string]any{}
		c["params"] = p
	}
	return p
}

// checkParse parses u and checks what the parser promises whatever the
// input: it leaves u as it was, and each problem names its field and is
// bounded. A manager without problems has policies, each with a known
// condition and action, and parses the same after a JSON round trip (as
// stored by the API server and listed again). ok is false when there were
// problems.
func checkParse(t *testing.T, u *unstructured.Unstructured) (m Manager, ok bool) {
	t.Helper()
	before, err := json.Marshal(u.Object)
	if err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	m, problems := Parse(u)
	if after, _ := json.Marshal(u.Object); !bytes.Equal(before, after) {
		t.Fatalf("Parse changed the object:\n%s\nto\n%s", before, after)
	}
	for _, p := range problems {
		if p.Field == "" {
			t.Fatalf("problem without a field path: %v", p)
		}
		if len(p.Field) > maxShownField || len(p.Detail) > maxShownText {
			t.Fatalf("problem not bounded: field %d bytes, detail %d bytes", len(p.Field), len(p.Detail))
		}
		if v, isString := p.BadValue.(string); isString && len(v) > maxShownValue {
			t.Fatalf("problem's value not bounded: %d bytes", len(v))
		}
	}
	if len(problems) > 0 {
		return m, false
	}
	if len(m.Policies) == 0 {
		t.Fatalf("valid manager without policies: %s", before)
	}
	for _, p := range m.Policies {
		if !slices.Contains([]string{ConditionTTL, ConditionPodsSucceed, ConditionPodsFailed, ConditionExpires, ConditionIdle, ConditionOwnerGone}, p.Condition.Type) ||
			!slices.Contains([]string{ActionDelete, ActionScaleDown, ActionWebhook, ActionSleep}, p.Action.Type) {
			t.Fatalf("valid manager with policy %q: condition %q, action %q", p.Name, p.Condition.Type, p.Action.Type)
		}
		for _, pt := range p.Action.SleepTo.Patches {
			data, err := json.Marshal(pt.Merge)
			if _, status := pt.Merge["status"]; pt.Kind == "" || pt.Group == "" || err != nil || len(data) > patch.MaxPatchBytes || status {
				t.Fatalf("valid manager with patch %s of %s: %v", data, pt, err)
			}
		}
	}
	again, problems := Parse(decode(before))
	if len(problems) > 0 {
		t.Fatalf("valid manager has problems after a JSON round trip: %v\n%s", problems, before)
	}
	if !sameManager(m, again) {
		t.Fatalf("a JSON round trip changed the manager:\n%+v\n%+v", m, again)
	}
	return m, true
}

// sameManager compares two parsed managers, each policy's Raw by its JSON
// (a JSON round trip may turn 3.0 into 3).
func sameManager(a, b Manager) bool {
	if len(a.Policies) != len(b.Policies) {
		return false
	}
	a.Policies, b.Policies = slices.Clone(a.Policies), slices.Clone(b.Policies)
	for i := range a.Policies {
		ra, _ := json.Marshal(a.Policies[i].Raw)
		rb, _ := json.Marshal(b.Policies[i].Raw)
		if !bytes.Equal(ra, rb) {
			return false
		}
		a.Policies[i].Raw, b.Policies[i].Raw = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

// checkEvaluation evaluates m on in as the sweep does: a NeedPods verdict
// is answered with the results bits give (two per policy: failed, not
// succeeded), a NeedActivity with an activity bits minutes before Now, a
// NeedTraffic with no answer or a few requests, as bits say, and
// evaluated again. Every evaluation must be deterministic,
// leave the input as it was, and be consistent:
//   - Fire names a policy in range that holds, not a stage fired already,
//     and no due time; a SLEEP policy's puts an awake target to sleep, or
//     wakes an asleep one (Wake), when no SLEEP policy holds, and then
//     names the policy it was asleep by, else the first SLEEP policy;
//   - NeedPods names a PODS_SUCCEED or PODS_FAILED policy not yet checked;
//   - NeedActivity names an IDLE policy, once; NeedTraffic one with a
//     traffic source, once each;
//   - Wait describes every policy, none holding but the SLEEP policies
//     that keep an asleep target asleep, and its NextDue is the earliest
//     of their due times, after Now; nothing but pods ends the wait before
//     then.
//
// There are at most as many NeedPods as policies.
func checkEvaluation(t *testing.T, m Manager, in Input, bits uint16) {
	t.Helper()
	in.Pods, in.Traffic = map[int]PodsCheck{}, map[int]traffic.Answer{}
	for range len(m.Policies) + 2 {
		checks, pods := maps.Clone(in.Checks), maps.Clone(in.Pods)
		out := Evaluate(m, in)
		if !maps.Equal(checks, in.Checks) || !maps.Equal(pods, in.Pods) {
			t.Fatalf("Evaluate changed its input: checks %v, pods %v", in.Checks, in.Pods)
		}
		if again := Evaluate(m, in); !reflect.DeepEqual(out, again) {
			t.Fatalf("Evaluate is not deterministic:\n%+v\n%+v", out, again)
		}
		switch out.Verdict {
		case Fire:
			if out.Policy < 0 || out.Policy >= len(m.Policies) {
				t.Fatalf("fired policy %d of %d", out.Policy, len(m.Policies))
			}
			p := m.Policies[out.Policy]
			if len(out.Policies) == 0 || out.Policies[len(out.Policies)-1].Holds == out.Wake || out.Policies[len(out.Policies)-1].Name != p.Name || out.Reason == "" {
				t.Fatalf("fired policy %d (%q), wake %v, described as %+v, reason %q", out.Policy, p.Name, out.Wake, out.Policies, out.Reason)
			}
			checkSleep(t, m, in, out)
			if !p.Final && in.Fired[p.Name] && p.Action.Type != ActionSleep {
				t.Fatalf("stage %q fired again", p.Name)
			}
			if !out.NextDue.IsZero() {
				t.Fatalf("fired with a due time %v", out.NextDue)
			}
			return
		case NeedPods:
			if out.Policy < 0 || out.Policy >= len(m.Policies) {
				t.Fatalf("pods check for policy %d of %d", out.Policy, len(m.Policies))
			}
			if typ := m.Policies[out.Policy].Condition.Type; typ != ConditionPodsSucceed && typ != ConditionPodsFailed {
				t.Fatalf("pods check for policy %d, a %s", out.Policy, typ)
			}
			if _, checked := in.Pods[out.Policy]; checked {
				t.Fatalf("pods check for policy %d again", out.Policy)
			}
			shift := 2 * (out.Policy % 8)
			in.Pods[out.Policy] = PodsCheck{Failed: int(bits >> shift & 1), NotSucceeded: int(bits >> (shift + 1) & 1), Example: "pod x (Failed)"}
			continue
		case NeedActivity:
			if out.Policy < 0 || out.Policy >= len(m.Policies) || m.Policies[out.Policy].Condition.Type != ConditionIdle {
				t.Fatalf("activity asked for policy %d of %+v", out.Policy, m.Policies)
			}
			if in.Activity != nil {
				t.Fatalf("activity asked for again")
			}
			in.Activity = &Activity{At: in.Now.Add(-time.Duration(bits) * time.Minute), What: "Pod x created"}
			continue
		case NeedTraffic:
			if out.Policy < 0 || out.Policy >= len(m.Policies) || m.Policies[out.Policy].Condition.Traffic == nil {
				t.Fatalf("traffic asked for policy %d of %+v", out.Policy, m.Policies)
			}
			if _, read := in.Traffic[out.Policy]; read {
				t.Fatalf("traffic asked for policy %d again", out.Policy)
			}
			in.Traffic = maps.Clone(in.Traffic)
			in.Traffic[out.Policy] = trafficAnswer(bits)
			continue
		case Wait:
			checkWait(t, m, in, out)
			return
		default:
			t.Fatalf("verdict %v", out.Verdict)
		}
	}
	t.Fatalf("evaluation asked for pods more often than there are policies")
}

// trafficAnswer is the traffic bits give: no answer, or a few requests
// (none too).
func trafficAnswer(bits uint16) traffic.Answer {
	if bits&1 == 1 {
		return traffic.Answer{Source: "preset istio", Unknown: "connection refused"}
	}
	return traffic.Answer{Source: "preset istio", Requests: float64(bits >> 1 & 3)}
}

// checkSleep checks a firing: a SLEEP policy's is a transition between
// asleep and awake, anything else leaves the target as it is.
func checkSleep(t *testing.T, m Manager, in Input, out Outcome) {
	t.Helper()
	p := m.Policies[out.Policy]
	isSleep := func(name string) bool {
		i := slices.IndexFunc(m.Policies, func(p Policy) bool { return p.Name == name })
		return i >= 0 && m.Policies[i].Action.Type == ActionSleep
	}
	switch {
	case p.Action.Type != ActionSleep:
		if out.Wake {
			t.Fatalf("policy %q, a %s, wakes", p.Name, p.Action.Type)
		}
	case !out.Wake:
		if in.Asleep != "" {
			t.Fatalf("policy %q puts a target asleep by %q to sleep", p.Name, in.Asleep)
		}
	default:
		first := slices.IndexFunc(m.Policies, func(p Policy) bool { return p.Action.Type == ActionSleep })
		if in.Asleep == "" || (isSleep(in.Asleep) && p.Name != in.Asleep) || (!isSleep(in.Asleep) && out.Policy != first) {
			t.Fatalf("policy %d (%q) wakes a target asleep by %q", out.Policy, p.Name, in.Asleep)
		}
		for _, st := range out.Policies {
			if st.Holds && isSleep(st.Name) {
				t.Fatalf("wakes while SLEEP policy %q holds: %+v", st.Name, out.Policies)
			}
		}
	}
}

func checkWait(t *testing.T, m Manager, in Input, out Outcome) {
	t.Helper()
	if len(out.Policies) != len(m.Policies) {
		t.Fatalf("waiting, %d of %d policies described", len(out.Policies), len(m.Policies))
	}
	var earliest time.Time
	sleeps, asleep := false, false
	for i, st := range out.Policies {
		if m.Policies[i].Action.Type == ActionSleep {
			sleeps = true
			if st.Holds {
				if in.Asleep == "" {
					t.Fatalf("waiting, awake, but SLEEP policy %q holds", st.Name)
				}
				asleep = true
			}
			if !st.Due.IsZero() && (earliest.IsZero() || st.Due.Before(earliest)) {
				earliest = st.Due
			}
			continue
		}
		// A policy that holds waits only outside its windows, until the
		// next opens.
		if open := window.NextOpen(m.Policies[i].Windows, in.Now); st.Holds && (open.IsZero() || open.Equal(in.Now) || !st.Due.Equal(open)) {
			t.Fatalf("waiting, but policy %q holds (windows %v, next open %v, due %v)", st.Name, m.Policies[i].Windows, open, st.Due)
		}
		if !st.Due.IsZero() && (earliest.IsZero() || st.Due.Before(earliest)) {
			earliest = st.Due
		}
	}
	if sleeps && in.Asleep != "" && !asleep {
		t.Fatalf("waiting, asleep by %q, but no SLEEP policy holds: %+v", in.Asleep, out.Policies)
	}
	if !out.NextDue.Equal(earliest) {
		t.Fatalf("next due %v, the earliest due time %v", out.NextDue, earliest)
	}
	if !out.NextDue.IsZero() && !out.NextDue.After(in.Now) {
		t.Fatalf("waiting at %v until %v", in.Now, out.NextDue)
	}
	// Time alone ends the wait no sooner than NextDue: evaluated later with
	// the same pods, it still waits.
	later := in
	if out.NextDue.IsZero() {
		later.Now = in.Now.Add(100 * 365 * 24 * time.Hour)
	} else {
		later.Now = out.NextDue.Add(-time.Nanosecond)
	}
	switch again := Evaluate(m, later); {
	case again.Verdict == Wait:
	case asleep && (again.Verdict == NeedPods || again.Verdict == NeedActivity || again.Verdict == NeedTraffic) && m.Policies[again.Policy].Action.Type == ActionSleep:
		// Asleep, a SLEEP policy that did not hold may ask for pods or
		// activity before the sleep ends: whatever they say, the policy
		// that holds still does, and nothing changes.
	default:
		t.Fatalf("waiting at %v until %v, but %v at %v", in.Now, out.NextDue, again.Verdict, later.Now)
	}
}
