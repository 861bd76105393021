package integration

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nsman/nsman/cmd"
	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/test/fixtures/original"
	"github.com/nsman/nsman/test/nsmantest"
)

// TestCRDAdmitsUpstreamExamples proves that nsman's CRD, with its
// validation, still admits every manager written for the original operator:
// those of its four examples, as the project's fixture in
// test/fixtures/original describes them.
func TestCRDAdmitsUpstreamExamples(t *testing.T) {
	if n := wantAdmitted(t, original.Examples(t)); n != 4 {
		t.Errorf("%d managers in the four examples, want 4", n)
	}
}

// TestCRDAdmitsExamples proves that nsman's CRD admits its own examples.
func TestCRDAdmitsExamples(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(nsmantest.RepoRoot(), "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	wantAdmitted(t, files)
}

// wantAdmitted dry-run creates every NamespaceManager in files, moved to a
// test namespace, and wants each admitted exactly as written (nothing
// pruned or defaulted) and valid for nsman too. It returns how many there
// were.
func wantAdmitted(t *testing.T, files []string) int {
	t.Helper()
	setup(t)
	ns := shared.Namespace(t)
	managers := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := nsmantest.Decode(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, obj := range objs {
			if obj.GetKind() != policy.Kind {
				continue
			}
			managers++
			name := filepath.Base(f) + "/" + obj.GetName()
			if _, errs := policy.Parse(obj); len(errs) > 0 {
				t.Errorf("%s: invalid for nsman: %v", name, errs.ToAggregate())
			}
			if code, out := validate(t, obj); code != cmd.ExitOK {
				t.Errorf("%s: nsman validate: exit %d\n%s", name, code, out)
			}
			obj.SetNamespace(ns)
			got, err := dryRunCreate(t, obj)
			if err != nil {
				t.Errorf("%s: not admitted: %v", name, err)
				continue
			}
			if !reflect.DeepEqual(got.Object["spec"], obj.Object["spec"]) {
				t.Errorf("%s: admitted as\n%v\nwant the spec unchanged:\n%v", name, got.Object["spec"], obj.Object["spec"])
			}
		}
	}
	if managers == 0 {
		t.Fatalf("no NamespaceManager in %v", files)
	}
	return managers
}

// validate runs nsman validate on obj, written to a file as a manifest is,
// and returns its exit code and what it printed of the problems.
func validate(t *testing.T, obj *unstructured.Unstructured) (int, string) {
	t.Helper()
	data, err := obj.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "manager.json")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	return cmd.Execute(t.Context(), []string{"validate", "-f", file}, &stdout, &stderr), stdout.String() + stderr.String()
}

func dryRunCreate(t *testing.T, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	t.Helper()
	return env.Dynamic.Resource(cluster.ManagerResource).Namespace(obj.GetNamespace()).
		Create(t.Context(), obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
}

// validManager has a policy of every condition and action type, so that each
// malformed case below changes one thing:
// policies[0] is TTL/DELETE, [1] PODS_SUCCEED/SCALE_DOWN, [2] PODS_SUCCEED/WEBHOOK.
func validManager(ns string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": policy.Group + "/" + policy.Version,
		"kind":       policy.Kind,
		"metadata":   map[string]any{"namespace": ns, "name": "validation-case"},
		"spec": map[string]any{
			"deactivated": false,
			"namespace":   ns,
			"policies": []any{
				map[string]any{
					"name":      "delete after an hour",
					"condition": map[string]any{"type": "TTL", "params": map[string]any{"ttlSeconds": int64(3600)}},
					"action":    map[string]any{"type": "DELETE"},
				},
				map[string]any{
					"name": "scale down when the tests pass",
					"condition": map[string]any{"type": "PODS_SUCCEED", "params": map[string]any{
						"podLabels":           map[string]any{"role": "e2e-test", "nsman.test/suite": "smoke"},
						"initialDelaySeconds": int64(30),
						"periodSeconds":       int64(10),
						"minChecks":           int64(2),
					}},
					"action": map[string]any{"type": "SCALE_DOWN", "params": map[string]any{"selectors": []any{
						map[string]any{"kind": "Deployment", "labels": map[string]any{"scale-down": "true"}},
						map[string]any{"kind": "statefulset"},
					}}},
				},
				map[string]any{
					"name":      "report passing tests",
					"condition": map[string]any{"type": "PODS_SUCCEED"},
					"action":    map[string]any{"type": "WEBHOOK", "params": map[string]any{"url": "https://hooks.example.com:8443/namespaces?event=done"}},
				},
			},
		},
	}}
}

// setAt returns a mutation that puts value at path, a list of object keys
// and list indexes from the top of the object.
func setAt(value any, path ...any) func(map[string]any) {
	return func(obj map[string]any) {
		switch key := path[len(path)-1].(type) {
		case string:
			parentAt(obj, path).(map[string]any)[key] = value
		case int:
			parentAt(obj, path).([]any)[key] = value
		}
	}
}

// deleteAt returns a mutation that removes the object key at the end of path.
func deleteAt(path ...any) func(map[string]any) {
	return func(obj map[string]any) {
		delete(parentAt(obj, path).(map[string]any), path[len(path)-1].(string))
	}
}

func parentAt(obj map[string]any, path []any) any {
	var cur any = obj
	for _, p := range path[:len(path)-1] {
		switch p := p.(type) {
		case string:
			cur = cur.(map[string]any)[p]
		case int:
			cur = cur.([]any)[p]
		}
	}
	return cur
}

// Paths into validManager.
var (
	ttlParams     = []any{"spec", "policies", 0, "condition", "params"}
	podsParams    = []any{"spec", "policies", 1, "condition", "params"}
	scaleSelector = []any{"spec", "policies", 1, "action", "params", "selectors", 0}
	webhookParams = []any{"spec", "policies", 2, "action", "params"}
)

func under(base []any, path ...any) []any {
	return append(append([]any{}, base...), path...)
}

// windowed gives validManager's first policy these windows.
func windowed(windows ...any) func(map[string]any) {
	return setAt(windows, "spec", "policies", 0, "windows")
}

// window is a window from from to to, on days, in timeZone ("" none).
func window(from, to, timeZone string, days ...any) map[string]any {
	w := map[string]any{"from": from, "to": to}
	if timeZone != "" {
		w["timeZone"] = timeZone
	}
	if days != nil {
		w["days"] = days
	}
	return w
}

// expiring makes validManager's first policy an EXPIRES condition with
// params.at set to at.
func expiring(at any) func(map[string]any) {
	return func(obj map[string]any) {
		setAt("EXPIRES", "spec", "policies", 0, "condition", "type")(obj)
		setAt(map[string]any{"at": at}, ttlParams...)(obj)
	}
}

// idling makes validManager's first policy an IDLE condition with params
// (none when nil).
func idling(params map[string]any) func(map[string]any) {
	return func(obj map[string]any) {
		setAt("IDLE", "spec", "policies", 0, "condition", "type")(obj)
		if params == nil {
			deleteAt(ttlParams...)(obj)
			return
		}
		setAt(params, ttlParams...)(obj)
	}
}

// sleeping makes validManager's policy i a SLEEP policy, its params (the
// selectors of policy 1) kept.
func sleeping(i int) func(map[string]any) {
	return setAt(policy.ActionSleep, "spec", "policies", i, "action", "type")
}

// asRule makes validManager a rule over the namespaces whose names match
// patterns, in place of its spec.namespace.
func asRule(patterns ...any) func(map[string]any) {
	return func(obj map[string]any) {
		spec := obj["spec"].(map[string]any)
		delete(spec, "namespace")
		spec["namePatterns"] = append([]any{}, patterns...) // [] when none, not null
	}
}

// withSelector returns a mutation that sets spec.namespaceSelector.
func withSelector(sel map[string]any) func(map[string]any) {
	return setAt(sel, "spec", "namespaceSelector")
}

// inTurn returns a mutation that applies mutations in order.
func inTurn(mutations ...func(map[string]any)) func(map[string]any) {
	return func(obj map[string]any) {
		for _, m := range mutations {
			m(obj)
		}
	}
}

// manyPatterns returns n valid name patterns.
func manyPatterns(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = fmt.Sprintf("e2e-%d-*", i)
	}
	return out
}

// malformedCase is a manager nsman's CRD refuses: validManager changed by
// mutate.
type malformedCase struct {
	name   string
	mutate func(map[string]any)
	// field is the path the API server's message names.
	field string
	// parseField is the path policy.Parse names, when it differs.
	parseField string
	// parseAccepts, when set, says why policy.Parse admits what the CRD
	// rejects: a known disagreement, pinned here so that it is noticed
	// when either side changes.
	parseAccepts string
}

// malformedCases are the managers the CRD refuses, on every Kubernetes
// nsman supports (TestOnTheOldestKubernetes runs them too).
func malformedCases() []malformedCase {
	const tooBig = int64(policy.MaxSeconds) + 1
	return []malformedCase{
		{name: "negative ttlSeconds", mutate: setAt(int64(-1), under(ttlParams, "ttlSeconds")...), field: "spec.policies[0].condition.params.ttlSeconds"},
		{name: "negative initialDelaySeconds", mutate: setAt(int64(-5), under(podsParams, "initialDelaySeconds")...), field: "spec.policies[1].condition.params.initialDelaySeconds"},
		{name: "periodSeconds 0", mutate: setAt(int64(0), under(podsParams, "periodSeconds")...), field: "spec.policies[1].condition.params.periodSeconds"},
		{name: "minChecks 0", mutate: setAt(int64(0), under(podsParams, "minChecks")...), field: "spec.policies[1].condition.params.minChecks"},
		{name: "ttlSeconds above the maximum", mutate: setAt(tooBig, under(ttlParams, "ttlSeconds")...), field: "spec.policies[0].condition.params.ttlSeconds"},
		{name: "initialDelaySeconds above the maximum", mutate: setAt(tooBig, under(podsParams, "initialDelaySeconds")...), field: "spec.policies[1].condition.params.initialDelaySeconds"},
		{name: "periodSeconds above the maximum", mutate: setAt(tooBig, under(podsParams, "periodSeconds")...), field: "spec.policies[1].condition.params.periodSeconds"},
		{name: "minChecks above the maximum", mutate: setAt(tooBig, under(podsParams, "minChecks")...), field: "spec.policies[1].condition.params.minChecks"},
		{name: "ttlSeconds a string", mutate: setAt("3600", under(ttlParams, "ttlSeconds")...), field: "spec.policies[0].condition.params.ttlSeconds"},
		{name: "ttlSeconds a fraction", mutate: setAt(1.5, under(ttlParams, "ttlSeconds")...), field: "spec.policies[0].condition.params.ttlSeconds"},
		{name: "EXPIRES with an at that is no time", mutate: expiring("next friday"), field: "spec.policies[0].condition.params.at"},
		{name: "EXPIRES with an at that is a date", mutate: expiring("2026-12-01"), field: "spec.policies[0].condition.params.at"},
		{name: "EXPIRES with an at in lower case", mutate: expiring("2026-12-01t18:00:00z"), field: "spec.policies[0].condition.params.at"},
		{name: "window on 8 days", mutate: windowed(window("22:00", "06:00", "", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun", "Mon")), field: "spec.policies[0].windows[0].days",
			parseAccepts: "nsman reads a day named twice once; the CRD bounds the list"},
		{name: "IDLE without params", mutate: idling(nil), field: "spec.policies[0].condition.params.idleSeconds"},
		{name: "IDLE without idleSeconds", mutate: idling(map[string]any{"ttlSeconds": int64(60)}), field: "spec.policies[0].condition.params.idleSeconds"},
		{name: "IDLE with idleSeconds 0", mutate: idling(map[string]any{"idleSeconds": int64(0)}), field: "spec.policies[0].condition.params.idleSeconds"},
		{name: "IDLE with idleSeconds above the maximum", mutate: idling(map[string]any{"idleSeconds": tooBig}), field: "spec.policies[0].condition.params.idleSeconds"},
		{name: "EXPIRES with an at that is a number", mutate: expiring(int64(1764547200)), field: "spec.policies[0].condition.params.at"},
		{name: "window on an unknown day", mutate: windowed(window("22:00", "06:00", "", "Monday")), field: "spec.policies[0].windows[0].days[0]"},
		{name: "window from equal to to", mutate: windowed(window("02:00", "02:00", "")), field: "spec.policies[0].windows[0]", parseField: "spec.policies[0].windows[0].to"},
		{name: "window to 24:00", mutate: windowed(window("22:00", "24:00", "")), field: "spec.policies[0].windows[0].to"},
		{name: "window from 9:00", mutate: windowed(window("9:00", "17:00", "")), field: "spec.policies[0].windows[0].from"},
		{name: "window without to", mutate: windowed(map[string]any{"from": "22:00"}), field: "spec.policies[0].windows[0].to"},
		{name: "window days a string", mutate: windowed(map[string]any{"from": "22:00", "to": "06:00", "days": "Mon"}), field: "spec.policies[0].windows[0].days"},
		{name: "window date of two digits a year", mutate: windowed(onDates("26-12-24")), field: "spec.policies[0].windows[0].dates[0]"},
		{name: "window date in month 13", mutate: windowed(onDates("2026-13-01")), field: "spec.policies[0].windows[0].dates[0]"},
		{name: "window date in 1969", mutate: windowed(onDates("1969-12-31")), field: "spec.policies[0].windows[0].dates[0]"},
		{name: "window range without an end", mutate: windowed(onDates("2099-12-24..")), field: "spec.policies[0].windows[0].dates[0]"},
		{name: "window of 367 dates", mutate: windowed(onDates(manyDates(367)...)), field: "spec.policies[0].windows[0].dates"},
		{name: "window of no dates", mutate: windowed(onDates()), field: "spec.policies[0].windows[0].dates"},
		{name: "window of neither hours nor dates", mutate: windowed(map[string]any{"days": []any{"Mon"}}), field: "spec.policies[0].windows[0].from"},
		{name: "window of dates from an hour without to", mutate: windowed(map[string]any{"dates": []any{"2099-12-24"}, "from": "20:00"}), field: "spec.policies[0].windows[0].to"},
		{name: "17 windows", mutate: windowed(manyWindows(17)...), field: "spec.policies[0].windows",
			parseAccepts: "the CRD bounds the list so that the cost of its from != to rule can be estimated"},
		{name: "warnBefore on PODS_SUCCEED", mutate: setAt([]any{"1h"}, "spec", "policies", 1, "warnBefore"), field: "spec.policies[1].warnBefore"},
		{name: "warnBefore of five", mutate: setAt([]any{"1h", "2h", "3h", "4h", "5h"}, "spec", "policies", 0, "warnBefore"), field: "spec.policies[0].warnBefore"},
		{name: "warnBefore twice the same", mutate: setAt([]any{"1h", "1h"}, "spec", "policies", 0, "warnBefore"), field: "spec.policies[0].warnBefore[1]"},
		{name: "warnBefore without a unit", mutate: setAt([]any{"12"}, "spec", "policies", 0, "warnBefore"), field: "spec.policies[0].warnBefore[0]"},
		{name: "unknown condition type", mutate: setAt("NEVER", "spec", "policies", 0, "condition", "type"), field: "spec.policies[0].condition.type"},
		{name: "lower-case condition type", mutate: setAt("ttl", "spec", "policies", 0, "condition", "type"), field: "spec.policies[0].condition.type"},
		{name: "condition type a number", mutate: setAt(int64(1), "spec", "policies", 0, "condition", "type"), field: "spec.policies[0].condition.type"},
		{name: "condition without type", mutate: deleteAt("spec", "policies", 0, "condition", "type"), field: "spec.policies[0].condition.type"},
		{name: "condition params not an object", mutate: setAt("ttlSeconds=60", ttlParams...), field: "spec.policies[0].condition.params"},
		{name: "unknown action type", mutate: setAt("ARCHIVE", "spec", "policies", 0, "action", "type"), field: "spec.policies[0].action.type"},
		{name: "lower-case action type", mutate: setAt("delete", "spec", "policies", 0, "action", "type"), field: "spec.policies[0].action.type"},
		{name: "action without type", mutate: deleteAt("spec", "policies", 0, "action", "type"), field: "spec.policies[0].action.type"},
		{name: "SLEEP in lower case", mutate: setAt("sleep", "spec", "policies", 0, "action", "type"), field: "spec.policies[0].action.type"},
		{name: "SLEEP with final true", mutate: inTurn(sleeping(0), setAt(true, "spec", "policies", 0, "final")), field: "spec.policies[0].final"},
		{name: "SLEEP with final true in windows", mutate: inTurn(sleeping(0), setAt(true, "spec", "policies", 0, "final"), windowed(window("20:00", "07:00", "Europe/Berlin"))),
			field: "spec.policies[0].final"},
		{name: "SLEEP selector kind DaemonSet", mutate: inTurn(sleeping(1), setAt("DaemonSet", under(scaleSelector, "kind")...)), field: "spec.policies[1].action.params.selectors[0].kind"},
		{name: "SLEEP selector kind a resource", mutate: inTurn(sleeping(1), setAt("cronjobs", under(scaleSelector, "kind")...)), field: "spec.policies[1].action.params.selectors[0].kind"},
		{name: "SLEEP selectors not a list", mutate: inTurn(sleeping(1), setAt("Deployment", "spec", "policies", 1, "action", "params", "selectors")), field: "spec.policies[1].action.params.selectors"},
		{name: "selector kind DaemonSet", mutate: setAt("DaemonSet", under(scaleSelector, "kind")...), field: "spec.policies[1].action.params.selectors[0].kind"},
		{name: "selector kind empty", mutate: setAt("", under(scaleSelector, "kind")...), field: "spec.policies[1].action.params.selectors[0].kind"},
		{name: "selector without kind", mutate: deleteAt(under(scaleSelector, "kind")...), field: "spec.policies[1].action.params.selectors[0].kind"},
		{name: "selectors not a list", mutate: setAt("Deployment", "spec", "policies", 1, "action", "params", "selectors"), field: "spec.policies[1].action.params.selectors"},
		{name: "selector not an object", mutate: setAt("Deployment", scaleSelector...), field: "spec.policies[1].action.params.selectors[0]"},
		{name: "selector label value not a label value", mutate: setAt("yes please", under(scaleSelector, "labels", "scale-down")...),
			field: "spec.policies[1].action.params.selectors[0].labels.scale-down", parseField: "spec.policies[1].action.params.selectors[0].labels[scale-down]"},
		{name: "WEBHOOK without url", mutate: deleteAt(under(webhookParams, "url")...), field: "spec.policies[2].action.params.url"},
		{name: "WEBHOOK without params", mutate: deleteAt("spec", "policies", 2, "action", "params"), field: "spec.policies[2].action.params.url"},
		{name: "WEBHOOK url empty", mutate: setAt("", under(webhookParams, "url")...), field: "spec.policies[2].action.params.url"},
		{name: "url ftp", mutate: setAt("ftp://x", under(webhookParams, "url")...), field: "spec.policies[2].action.params.url"},
		{name: "url not a url", mutate: setAt("not a url", under(webhookParams, "url")...), field: "spec.policies[2].action.params.url"},
		{name: "url relative", mutate: setAt("/hooks/done", under(webhookParams, "url")...), field: "spec.policies[2].action.params.url"},
		{name: "url without host", mutate: setAt("http://", under(webhookParams, "url")...), field: "spec.policies[2].action.params.url"},
		{name: "url with only a port", mutate: setAt("http://:8080/done", under(webhookParams, "url")...), field: "spec.policies[2].action.params.url"},
		{name: "url with credentials", mutate: setAt("https://user:secret@hooks.example.com/done", under(webhookParams, "url")...), field: "spec.policies[2].action.params.url"},
		{name: "url a number", mutate: setAt(int64(8080), under(webhookParams, "url")...), field: "spec.policies[2].action.params.url"},
		{name: "duplicate policy names", mutate: setAt("delete after an hour", "spec", "policies", 2, "name"), field: "spec.policies", parseField: "spec.policies[2].name"},
		{name: "name of two characters", mutate: setAt("ab", "spec", "policies", 0, "name"), field: "spec.policies[0].name"},
		{name: "name with a leading space", mutate: setAt(" delete after an hour", "spec", "policies", 0, "name"), field: "spec.policies[0].name"},
		{name: "name with a dash", mutate: setAt("delete-after-an-hour", "spec", "policies", 0, "name"), field: "spec.policies[0].name"},
		{name: "name of 93 characters", mutate: setAt(strings.Repeat("a", 93), "spec", "policies", 0, "name"), field: "spec.policies[0].name"},
		{name: "name empty", mutate: setAt("", "spec", "policies", 0, "name"), field: "spec.policies[0].name"},
		{name: "policy without name", mutate: deleteAt("spec", "policies", 0, "name"), field: "spec.policies[0].name"},
		{name: "policy without condition", mutate: deleteAt("spec", "policies", 0, "condition"), field: "spec.policies[0].condition"},
		{name: "policy without action", mutate: deleteAt("spec", "policies", 0, "action"), field: "spec.policies[0].action"},
		{name: "policy not an object", mutate: setAt("delete after an hour", "spec", "policies", 0), field: "spec.policies[0]"},
		{name: "empty policies", mutate: setAt([]any{}, "spec", "policies"), field: "spec.policies"},
		{name: "missing policies", mutate: deleteAt("spec", "policies"), field: "spec.policies"},
		{name: "policies not a list", mutate: setAt(map[string]any{"name": "delete after an hour"}, "spec", "policies"), field: "spec.policies"},
		{name: "missing spec", mutate: deleteAt("spec"), field: "spec"},
		{name: "spec not an object", mutate: setAt("delete", "spec"), field: "spec"},
		{name: "namespace not a DNS label", mutate: setAt("Not_A_Label", "spec", "namespace"), field: "spec.namespace"},
		{name: "namespace of 64 characters", mutate: setAt(strings.Repeat("n", 64), "spec", "namespace"), field: "spec.namespace"},
		{name: "deactivated a string", mutate: setAt("false", "spec", "deactivated"), field: "spec.deactivated"},
		{name: "podLabels not a map", mutate: setAt("role=e2e-test", under(podsParams, "podLabels")...), field: "spec.policies[1].condition.params.podLabels"},
		{name: "podLabels value a list", mutate: setAt([]any{"e2e-test"}, under(podsParams, "podLabels", "role")...),
			field: "spec.policies[1].condition.params.podLabels.role", parseField: "spec.policies[1].condition.params.podLabels[role]"},
		{name: "podLabels name not a label name", mutate: setAt("x", under(podsParams, "podLabels", "not a label")...),
			field: "spec.policies[1].condition.params.podLabels", parseField: "spec.policies[1].condition.params.podLabels[not a label]"},
		{name: "podLabels value too long", mutate: setAt(strings.Repeat("v", 64), under(podsParams, "podLabels", "role")...),
			field: "spec.policies[1].condition.params.podLabels.role", parseField: "spec.policies[1].condition.params.podLabels[role]"},

		// Rules.
		{name: "spec.namespace and namePatterns", mutate: setAt([]any{"e2e-*"}, "spec", "namePatterns"), field: "spec", parseField: "spec.namespace"},
		{name: "spec.namespace and namespaceSelector", mutate: withSelector(map[string]any{"matchLabels": map[string]any{"ci": "e2e"}}), field: "spec", parseField: "spec.namespace"},
		{name: "pattern with an unclosed class", mutate: asRule("e2e-["), field: "spec.namePatterns[0]"},
		{name: "pattern with a range without an end", mutate: asRule("e2e-*", "[a-]"), field: "spec.namePatterns[1]"},
		{name: "pattern ending in a backslash", mutate: asRule(`e2e-\`), field: "spec.namePatterns[0]"},
		{name: "pattern empty", mutate: asRule(""), field: "spec.namePatterns[0]"},
		{name: "pattern a number", mutate: asRule(int64(42)), field: "spec.namePatterns[0]"},
		{name: "pattern of 254 characters", mutate: asRule(strings.Repeat("e", 253) + "*"), field: "spec.namePatterns[0]"},
		{name: "empty namePatterns", mutate: asRule(), field: "spec.namePatterns"},
		{name: "65 patterns", mutate: asRule(manyPatterns(65)...), field: "spec.namePatterns"},
		{name: "In without values", mutate: inTurn(asRule("e2e-*"), withSelector(map[string]any{"matchExpressions": []any{
			map[string]any{"key": "ci", "operator": "In"},
		}})), field: "spec.namespaceSelector.matchExpressions[0]", parseField: "spec.namespaceSelector.matchExpressions[0].values"},
		{name: "Exists with values", mutate: inTurn(asRule("e2e-*"), withSelector(map[string]any{"matchExpressions": []any{
			map[string]any{"key": "ci", "operator": "Exists", "values": []any{"e2e"}},
		}})), field: "spec.namespaceSelector.matchExpressions[0]", parseField: "spec.namespaceSelector.matchExpressions[0].values"},
		{name: "unknown selector operator", mutate: inTurn(asRule("e2e-*"), withSelector(map[string]any{"matchExpressions": []any{
			map[string]any{"key": "ci", "operator": "Equals", "values": []any{"e2e"}},
		}})), field: "spec.namespaceSelector.matchExpressions[0].operator"},
		{name: "empty selector", mutate: inTurn(deleteAt("spec", "namespace"), withSelector(map[string]any{})), field: "spec.namespaceSelector"},
		{name: "selector with empty matchLabels", mutate: inTurn(deleteAt("spec", "namespace"), withSelector(map[string]any{"matchLabels": map[string]any{}})), field: "spec.namespaceSelector"},
		{name: "selector label value too long", mutate: inTurn(asRule("e2e-*"), withSelector(map[string]any{"matchLabels": map[string]any{"ci": strings.Repeat("v", 64)}})),
			field: "spec.namespaceSelector.matchLabels.ci", parseField: "spec.namespaceSelector.matchLabels"},
		{name: "enforce on a manager of one namespace", mutate: setAt(true, "spec", "enforce"), field: "spec.enforce"},
		{name: "enforce a string", mutate: inTurn(asRule("e2e-*"), setAt("true", "spec", "enforce")), field: "spec.enforce"},

		// Known disagreements: the CRD is stricter than nsman.
		{name: "podLabels value a number", mutate: setAt(int64(1), under(podsParams, "podLabels", "role")...),
			field:        "spec.policies[1].condition.params.podLabels.role",
			parseAccepts: "nsman takes a number as its text, as the original operator's JSON binding did; the CRD wants a string"},
		{name: "selector labels value a boolean", mutate: setAt(true, under(scaleSelector, "labels", "scale-down")...),
			field:        "spec.policies[1].action.params.selectors[0].labels.scale-down",
			parseAccepts: "nsman takes a boolean as its text; the CRD wants a string"},
		{name: "negative initialDelaySeconds on a TTL condition", mutate: setAt(int64(-1), under(ttlParams, "initialDelaySeconds")...),
			field:        "spec.policies[0].condition.params.initialDelaySeconds",
			parseAccepts: "nsman ignores the params its condition type does not use; the CRD checks every field it declares"},
		{name: "ftp url on a DELETE action", mutate: setAt(map[string]any{"url": "ftp://x"}, "spec", "policies", 0, "action", "params"),
			field:        "spec.policies[0].action.params.url",
			parseAccepts: "nsman ignores the params its action type does not use; the CRD checks every field it declares"},
		{name: "DELETE via another", mutate: setAt(map[string]any{"via": "application"}, "spec", "policies", 0, "action", "params"),
			field: "spec.policies[0].action.params.via"},
		{name: "via owner on a SCALE_DOWN action", mutate: setAt(map[string]any{"via": "owner"}, "spec", "policies", 1, "action", "params"),
			field:        "spec.policies[1].action.params.via",
			parseAccepts: "nsman ignores the params its action type does not use; the CRD checks every field it declares"},
		{name: "SCALE_DOWN to -1 replicas", mutate: setAt(int64(-1), "spec", "policies", 1, "action", "params", "replicas"),
			field: "spec.policies[1].action.params.replicas"},
		{name: "SCALE_DOWN to 1.5 replicas", mutate: setAt(1.5, "spec", "policies", 1, "action", "params", "replicas"),
			field: "spec.policies[1].action.params.replicas"},
		{name: "SCALE_DOWN to more replicas than an int32", mutate: setAt(int64(1)<<31, "spec", "policies", 1, "action", "params", "replicas"),
			field: "spec.policies[1].action.params.replicas"},
		{name: "replicas on a DELETE action", mutate: setAt(map[string]any{"replicas": int64(1)}, "spec", "policies", 0, "action", "params"),
			field:        "spec.policies[0].action.params.replicas",
			parseAccepts: "nsman ignores the params its action type does not use; the CRD checks every field it declares"},
		{name: "patches on a DELETE action", mutate: setAt(map[string]any{"patches": []any{suspending("HelmRelease.helm.toolkit.fluxcd.io")}}, "spec", "policies", 0, "action", "params"),
			field:        "spec.policies[0].action.params.patches",
			parseAccepts: "nsman ignores the params its action type does not use; the CRD checks every field it declares"},
		{name: "9 patches", mutate: patching(manyPatches(9)...), field: "spec.policies[1].action.params.patches"},
		{name: "a patch of a kind without its group", mutate: patching(suspending("HelmRelease")), field: "spec.policies[1].action.params.patches[0].kind"},
		{name: "a patch of a kind of a group without a dot", mutate: patching(suspending("Deployment.apps")), field: "spec.policies[1].action.params.patches[0].kind"},
		{name: "a patch without kind", mutate: patching(map[string]any{"patch": map[string]any{"spec": map[string]any{"suspend": true}}}), field: "spec.policies[1].action.params.patches[0].kind"},
		{name: "a patch without patch", mutate: patching(map[string]any{"kind": "HelmRelease.helm.toolkit.fluxcd.io"}), field: "spec.policies[1].action.params.patches[0].patch"},
		{name: "a patch that is empty", mutate: patching(map[string]any{"kind": "HelmRelease.helm.toolkit.fluxcd.io", "patch": map[string]any{}}), field: "spec.policies[1].action.params.patches[0].patch"},
		{name: "a patch that is a string", mutate: patching(map[string]any{"kind": "HelmRelease.helm.toolkit.fluxcd.io", "patch": "suspend"}), field: "spec.policies[1].action.params.patches[0].patch"},
		{name: "a patch's label name invalid", mutate: patching(map[string]any{"kind": "HelmRelease.helm.toolkit.fluxcd.io", "labels": map[string]any{"a b": "x"}, "patch": map[string]any{"spec": map[string]any{"suspend": true}}}),
			field: "spec.policies[1].action.params.patches[0].labels", parseField: "spec.policies[1].action.params.patches[0].labels[a b]"},
		{name: "65 policies", mutate: setAt(manyTTLPolicies(65), "spec", "policies"),
			field:        "spec.policies",
			parseAccepts: "the CRD bounds the list so that the cost of the uniqueness rule can be estimated"},
		{name: "17 selectors", mutate: setAt(manySelectors(17), "spec", "policies", 1, "action", "params", "selectors"),
			field:        "spec.policies[1].action.params.selectors",
			parseAccepts: "the CRD bounds the list so that the cost of the label name rule can be estimated"},
		{name: "17 selectors on a SLEEP action", mutate: inTurn(sleeping(1), setAt(manySelectors(17), "spec", "policies", 1, "action", "params", "selectors")),
			field:        "spec.policies[1].action.params.selectors",
			parseAccepts: "the CRD bounds the list so that the cost of the label name rule can be estimated"},
		{name: "65 podLabels", mutate: setAt(manyLabels(65), under(podsParams, "podLabels")...),
			field:        "spec.policies[1].condition.params.podLabels",
			parseAccepts: "the CRD bounds the map so that the cost of the label name rule can be estimated"},
		{name: "url longer than 2048", mutate: setAt("https://hooks.example.com/"+strings.Repeat("x", 2048), under(webhookParams, "url")...),
			field:        "spec.policies[2].action.params.url",
			parseAccepts: "the CRD bounds url length so that the cost of its CEL rules can be estimated"},
		{name: "periodSeconds 0 on a PODS_FAILED condition", mutate: inTurn(setAt("PODS_FAILED", "spec", "policies", 1, "condition", "type"), setAt(int64(0), under(podsParams, "periodSeconds")...)),
			field:        "spec.policies[1].condition.params.periodSeconds",
			parseAccepts: "nsman ignores the params its condition type does not use; the CRD checks every field it declares"},
		{name: "minChecks 0 on a TTL condition", mutate: setAt(int64(0), under(ttlParams, "minChecks")...),
			field:        "spec.policies[0].condition.params.minChecks",
			parseAccepts: "nsman ignores the params its condition type does not use; the CRD checks every field it declares"},
		{name: "podLabels name not a label name on a TTL condition", mutate: setAt(map[string]any{"not a label": "x"}, under(ttlParams, "podLabels")...),
			field:        "spec.policies[0].condition.params.podLabels",
			parseAccepts: "nsman ignores the params its condition type does not use; the CRD checks every field it declares"},
		{name: "DaemonSet selector on a DELETE action", mutate: setAt(map[string]any{"selectors": []any{map[string]any{"kind": "DaemonSet"}}}, "spec", "policies", 0, "action", "params"),
			field:        "spec.policies[0].action.params.selectors[0].kind",
			parseAccepts: "nsman ignores the params its action type does not use; the CRD checks every field it declares"},
		{name: "url with credentials on a SCALE_DOWN action", mutate: setAt("https://user:secret@hooks.example.com/", "spec", "policies", 1, "action", "params", "url"),
			field:        "spec.policies[1].action.params.url",
			parseAccepts: "nsman ignores the params its action type does not use; the CRD checks every field it declares"},
		{name: "pattern with a negated empty class", mutate: asRule("e2e-[^]"), field: "spec.namePatterns[0]"},
		{name: "pattern with a negated class opening with a dash", mutate: asRule("e2e-[^-a]"), field: "spec.namePatterns[0]"},
	}
}

// TestCRDRejectsMalformed proves that nsman's CRD rejects at admission what
// policy.Parse rejects, naming the offending field, so that a user learns of
// a mistake on kubectl apply rather than in a sweep's report.
func TestCRDRejectsMalformed(t *testing.T) {
	setup(t)
	ns := shared.Namespace(t)
	cases := malformedCases()

	base := validManager(ns)
	if _, errs := policy.Parse(base); len(errs) > 0 {
		t.Fatalf("base manager invalid for nsman: %v", errs.ToAggregate())
	}
	if _, err := dryRunCreate(t, base); err != nil {
		t.Fatalf("base manager not admitted: %v", err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := validManager(ns)
			tc.mutate(obj.Object)

			_, err := dryRunCreate(t, obj)
			t.Logf("admission: %v", err)
			switch {
			case err == nil:
				t.Errorf("admitted, want rejected naming %s", tc.field)
			case !apierrors.IsInvalid(err):
				t.Errorf("got %v, want an Invalid error", err)
			case !strings.Contains(err.Error(), tc.field+": "):
				t.Errorf("got %q, want it to name %s", err, tc.field)
			}

			// nsman validate refuses what the CRD refuses: the same verdict.
			if code, out := validate(t, obj); code != cmd.ExitFailed {
				t.Errorf("nsman validate: exit %d, want %d as the API server refused it\n%s", code, cmd.ExitFailed, out)
			}

			_, errs := policy.Parse(obj)
			if tc.parseAccepts != "" {
				if len(errs) > 0 {
					t.Errorf("policy.Parse now rejects it too (%v): the disagreement %q is gone; make this an ordinary case", errs.ToAggregate(), tc.parseAccepts)
				}
				return
			}
			want := tc.field
			if tc.parseField != "" {
				want = tc.parseField
			}
			if !namesField(errs, want) {
				t.Errorf("policy.Parse reported %v, want an error at %s", errs.ToAggregate(), want)
			}
		})
	}
}

// edgeCase is a manager at the edge of what nsman's CRD admits.
type edgeCase struct {
	name   string
	mutate func(map[string]any)
}

// edgeCases are the managers the CRD admits, on every Kubernetes nsman
// supports (TestOnTheOldestKubernetes runs them too).
func edgeCases() []edgeCase {
	const maxSeconds = int64(policy.MaxSeconds)
	return []edgeCase{
		{name: "ttlSeconds 0", mutate: setAt(int64(0), under(ttlParams, "ttlSeconds")...)},
		{name: "DELETE via owner", mutate: setAt(map[string]any{"via": "owner"}, "spec", "policies", 0, "action", "params")},
		{name: "SCALE_DOWN to 0 replicas", mutate: setAt(int64(0), "spec", "policies", 1, "action", "params", "replicas")},
		{name: "SCALE_DOWN to the most replicas", mutate: setAt(maxSeconds, "spec", "policies", 1, "action", "params", "replicas")},
		{name: "ttlSeconds at the maximum", mutate: setAt(maxSeconds, under(ttlParams, "ttlSeconds")...)},
		{name: "initialDelaySeconds 0", mutate: setAt(int64(0), under(podsParams, "initialDelaySeconds")...)},
		{name: "periodSeconds 1", mutate: setAt(int64(1), under(podsParams, "periodSeconds")...)},
		{name: "periodSeconds at the maximum", mutate: setAt(maxSeconds, under(podsParams, "periodSeconds")...)},
		{name: "minChecks 1", mutate: setAt(int64(1), under(podsParams, "minChecks")...)},
		{name: "minChecks at the maximum", mutate: setAt(maxSeconds, under(podsParams, "minChecks")...)},
		{name: "no params", mutate: deleteAt(ttlParams...)},
		{name: "EXPIRES at a time", mutate: expiring("2026-12-01T18:00:00Z")},
		{name: "window across midnight on every day in UTC", mutate: windowed(window("22:00", "06:00", ""))},
		{name: "window on weekdays in a time zone", mutate: windowed(window("00:00", "23:59", "Europe/Berlin", "Mon", "Tue", "Wed", "Thu", "Fri"))},
		{name: "16 windows", mutate: windowed(manyWindows(16)...)},
		{name: "window of dates alone", mutate: windowed(onDates("2099-12-24..2100-01-01"))},
		{name: "window of 366 dates in years 1970 to 9999", mutate: windowed(onDates(append(manyDates(365), "9999-12-31")...))},
		{name: "window of a range of 366 days", mutate: windowed(onDates("2096-01-01..2096-12-31"))},
		{name: "window of dates and days and hours across midnight in a time zone", mutate: windowed(map[string]any{
			"dates": []any{"2099-12-24..2100-01-06", "2100-04-01"}, "days": []any{"Mon", "Thu"}, "from": "20:00", "to": "07:00", "timeZone": "Europe/Berlin",
		})},
		{name: "EXPIRES at a time with an offset", mutate: expiring("2026-12-01T18:00:00+01:00")},
		{name: "EXPIRES without params.at (the namespace's annotation)", mutate: func(obj map[string]any) {
			setAt("EXPIRES", "spec", "policies", 0, "condition", "type")(obj)
			deleteAt(ttlParams...)(obj)
		}},
		{name: "IDLE for an hour", mutate: idling(map[string]any{"idleSeconds": int64(3600)})},
		{name: "warnBefore a day and an hour", mutate: setAt([]any{"1d", "1h"}, "spec", "policies", 0, "warnBefore")},
		{name: "warnBefore on IDLE", mutate: inTurn(idling(map[string]any{"idleSeconds": int64(3600)}), setAt([]any{"1d12h", "90m", "1m", "2d"}, "spec", "policies", 0, "warnBefore"))},
		{name: "IDLE for a second", mutate: idling(map[string]any{"idleSeconds": int64(1)})},
		{name: "IDLE at the maximum", mutate: idling(map[string]any{"idleSeconds": maxSeconds})},
		{name: "name of three characters", mutate: setAt("a_b", "spec", "policies", 0, "name")},
		{name: "name of 92 characters", mutate: setAt(strings.Repeat("a", 92), "spec", "policies", 0, "name")},
		{name: "kind in upper case", mutate: setAt("DEPLOYMENT", under(scaleSelector, "kind")...)},
		{name: "kind in mixed case", mutate: setAt("statefulSet", under(scaleSelector, "kind")...)},
		{name: "selector without labels", mutate: deleteAt(under(scaleSelector, "labels")...)},
		{name: "SCALE_DOWN without params", mutate: deleteAt("spec", "policies", 1, "action", "params")},
		{name: "SLEEP without params", mutate: inTurn(sleeping(0), deleteAt("spec", "policies", 0, "action", "params"))},
		{name: "SLEEP with selectors", mutate: sleeping(1)},
		{name: "SLEEP with 16 selectors", mutate: inTurn(sleeping(1), setAt(manySelectors(16), "spec", "policies", 1, "action", "params", "selectors"))},
		{name: "SLEEP with final false", mutate: inTurn(sleeping(0), setAt(false, "spec", "policies", 0, "final"))},
		{name: "SLEEP at night and weekends in Europe/Berlin or when idle beside a final WEBHOOK", mutate: inTurn(
			sleeping(0), windowed(window("20:00", "07:00", "Europe/Berlin"), window("07:00", "20:00", "Europe/Berlin", "Sat", "Sun")),
			sleeping(1), setAt(map[string]any{"type": "IDLE", "params": map[string]any{"idleSeconds": int64(3600)}}, "spec", "policies", 1, "condition"),
			setAt(true, "spec", "policies", 2, "final"),
		)},
		{name: "16 selectors", mutate: setAt(manySelectors(16), "spec", "policies", 1, "action", "params", "selectors")},
		{name: "SCALE_DOWN suspends HelmReleases by label, labelling and annotating them", mutate: patching(map[string]any{
			"kind": "HelmRelease.helm.toolkit.fluxcd.io", "labels": map[string]any{"tier": "web"},
			"patch": map[string]any{"spec": map[string]any{"suspend": true, "values": map[string]any{"replicas": int64(0), "hosts": []any{}}},
				"metadata": map[string]any{"labels": map[string]any{"asleep": "yes"}, "annotations": map[string]any{"example.com/why": "nights", "example.com/old": nil}}},
		})},
		{name: "SLEEP with 8 patches", mutate: inTurn(sleeping(1), patching(manyPatches(8)...))},
		{name: "a patch of a kind of 63 characters in a group of sigs", mutate: patching(suspending(strings.Repeat("K", 63) + ".cluster.x-k8s.io"))},
		{name: "64 policies", mutate: setAt(manyTTLPolicies(64), "spec", "policies")},
		{name: "64 podLabels", mutate: setAt(manyLabels(64), under(podsParams, "podLabels")...)},
		{name: "empty podLabels", mutate: setAt(map[string]any{}, under(podsParams, "podLabels")...)},
		{name: "empty label value", mutate: setAt("", under(podsParams, "podLabels", "role")...)},
		{name: "label name with a 253-character prefix", mutate: setAt("x", under(podsParams, "podLabels", strings.Repeat("a", 63)+"."+strings.Repeat("b", 63)+"."+strings.Repeat("c", 63)+"."+strings.Repeat("d", 61)+"/"+strings.Repeat("n", 63))...)},
		{name: "label value of 63 characters", mutate: setAt(strings.Repeat("v", 63), under(podsParams, "podLabels", "role")...)},
		{name: "url http to an IP and port", mutate: setAt("http://127.0.0.1:8080/hook", under(webhookParams, "url")...)},
		{name: "url with @ in its path and query", mutate: setAt("https://hooks.example.com/users/@me?cc=a@b.example#@x", under(webhookParams, "url")...)},
		{name: "url with an IPv6 host", mutate: setAt("http://[::1]:8080/hook", under(webhookParams, "url")...)},
		{name: "url scheme in upper case", mutate: setAt("HTTPS://hooks.example.com/done", under(webhookParams, "url")...)},
		{name: "url of 2048 characters", mutate: setAt("https://hooks.example.com/"+strings.Repeat("x", 2048-len("https://hooks.example.com/")), under(webhookParams, "url")...)},
		{name: "namespace empty", mutate: setAt("", "spec", "namespace")},
		{name: "namespace absent", mutate: deleteAt("spec", "namespace")},
		{name: "namespace of 63 characters", mutate: setAt(strings.Repeat("n", 63), "spec", "namespace")},
		{name: "deactivated", mutate: setAt(true, "spec", "deactivated")},
		{name: "unknown fields", mutate: setAt("kept or pruned, never refused", under(ttlParams, "comment")...)},
		{name: "a rule by selector and patterns", mutate: inTurn(asRule("e2e-*", "pr-[0-9]*"), withSelector(map[string]any{
			"matchLabels": map[string]any{"ci": "e2e"},
			"matchExpressions": []any{
				map[string]any{"key": "team", "operator": "In", "values": []any{"qa", "web"}},
				map[string]any{"key": "keep", "operator": "DoesNotExist"},
			},
		}))},
		{name: "a rule by selector only", mutate: inTurn(deleteAt("spec", "namespace"), withSelector(map[string]any{"matchLabels": map[string]any{"ci": "e2e"}}))},
		{name: "a rule beside an empty spec.namespace", mutate: inTurn(asRule("e2e-*"), setAt("", "spec", "namespace"))},
		{name: "a deactivated rule", mutate: inTurn(asRule("e2e-*"), setAt(true, "spec", "deactivated"))},
		{name: "64 patterns", mutate: asRule(manyPatterns(64)...)},
		{name: "pattern of 253 characters", mutate: asRule(strings.Repeat("e", 252) + "*")},
		{name: "patterns in every form path.Match knows", mutate: asRule("*", "e2e-??", "[^a-z]*", `[a-c\-]x`, `\*`, `run-[\]]`, "e2e-]")},
	}
}

// TestCRDAdmitsEdgeValues proves that the CRD's bounds and rules stop at
// the edge of what nsman accepts, not before it.
func TestCRDAdmitsEdgeValues(t *testing.T) {
	setup(t)
	ns := shared.Namespace(t)
	cases := edgeCases()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := validManager(ns)
			tc.mutate(obj.Object)
			if _, errs := policy.Parse(obj); len(errs) > 0 {
				t.Fatalf("invalid for nsman: %v", errs.ToAggregate())
			}
			if _, err := dryRunCreate(t, obj); err != nil {
				t.Errorf("not admitted: %v", err)
			}
			// nsman validate admits what the CRD admits: the same verdict.
			if code, out := validate(t, obj); code != cmd.ExitOK {
				t.Errorf("nsman validate: exit %d, want %d as the API server admitted it\n%s", code, cmd.ExitOK, out)
			}
		})
	}
}

// TestCRDKeepsAPatchAsWritten proves that the API server stores a patch
// whole: its fields, which no schema declares, and its nulls, which remove
// a field when the patch is applied, come back as written, and policy
// reads them so.
func TestCRDKeepsAPatchAsWritten(t *testing.T) {
	setup(t)
	merge := map[string]any{
		"spec":     map[string]any{"suspend": true, "interval": nil, "values": map[string]any{"replicas": int64(0), "ratio": 0.5, "hosts": []any{"a", nil}}},
		"metadata": map[string]any{"annotations": map[string]any{"example.com/old": nil, "example.com/why": "nights"}},
	}
	obj := validManager(shared.Namespace(t))
	patching(map[string]any{"kind": "HelmRelease.helm.toolkit.fluxcd.io", "patch": merge})(obj.Object)
	stored, err := dryRunCreate(t, obj)
	if err != nil {
		t.Fatalf("not admitted: %v", err)
	}
	m, errs := policy.Parse(stored)
	if len(errs) > 0 {
		t.Fatalf("invalid for nsman as stored: %v", errs.ToAggregate())
	}
	if got := m.Policies[1].Action.SleepTo.Patches; len(got) != 1 || !reflect.DeepEqual(got[0].Merge, merge) {
		t.Errorf("the patch is stored as %#v, want %#v", got, merge)
	}
}

// onDates is a window open all day on dates.
func onDates(dates ...string) map[string]any {
	list := make([]any, len(dates))
	for i, d := range dates {
		list[i] = d
	}
	return map[string]any{"dates": list}
}

// manyDates returns n distinct dates, a day each, from 1970-01-01.
func manyDates(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = time.Date(1970, 1, 1+i, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
	}
	return out
}

// manyWindows returns n valid windows, an hour each.
func manyWindows(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = window(fmt.Sprintf("%02d:00", i), fmt.Sprintf("%02d:30", i), "America/New_York")
	}
	return out
}

// manyTTLPolicies returns n distinct, valid TTL policies.
func manyTTLPolicies(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = ttlPolicy(fmt.Sprintf("delete after %d hours", i+1), int64(i+1)*3600, deleteAction)
	}
	return out
}

// manySelectors returns n valid SCALE_DOWN selectors.
func manySelectors(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = map[string]any{"kind": "Deployment", "labels": map[string]any{"tier": fmt.Sprint("t", i)}}
	}
	return out
}

// patching gives validManager's SCALE_DOWN these patches.
func patching(patches ...any) func(map[string]any) {
	return setAt(patches, "spec", "policies", 1, "action", "params", "patches")
}

// suspending is a patch that suspends the objects of kind.
func suspending(kind string) map[string]any {
	return map[string]any{"kind": kind, "patch": map[string]any{"spec": map[string]any{"suspend": true}}}
}

// manyPatches returns n valid patches, each of a kind of its own.
func manyPatches(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = suspending(fmt.Sprintf("Thing%d.example.com", i))
	}
	return out
}

// manyLabels returns a valid label map of n entries.
func manyLabels(n int) map[string]any {
	out := make(map[string]any, n)
	for i := range n {
		out[fmt.Sprint("label-", i)] = "x"
	}
	return out
}

func namesField(errs field.ErrorList, path string) bool {
	for _, e := range errs {
		if e.Field == path {
			return true
		}
	}
	return false
}
