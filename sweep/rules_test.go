package sweep

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/listpage"
	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/internal/record"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// TestIndexAhead: a sweep lists the pods index beside the namespaces only
// for a rule that will be screened with it, and the activity index for an
// IDLE rule over many namespaces, as its last status tells.
func TestIndexAhead(t *testing.T) {
	pods := map[string]any{"name": "done", "condition": map[string]any{"type": "PODS_SUCCEED", "params": map[string]any{"podLabels": map[string]any{"app": "e2e"}}}, "action": map[string]any{"type": "DELETE"}}
	ttl := map[string]any{"name": "late", "condition": map[string]any{"type": "TTL", "params": map[string]any{"ttlSeconds": int64(60)}}, "action": map[string]any{"type": "DELETE"}}
	ruleWith := func(namespace string, summary *status.RuleSummary, deactivated bool, policies ...any) listpage.Listed {
		spec := map[string]any{"namePatterns": []any{"e2e-*"}, "policies": policies}
		if deactivated {
			spec["deactivated"] = true
		}
		var st []byte
		if summary != nil {
			st, _ = json.Marshal(status.Status{Rule: summary})
		}
		return listpage.Listed{Status: st, Obj: &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "k8s.consol.de/v1beta1", "kind": "NamespaceManager",
			"metadata": map[string]any{"name": "leftovers", "namespace": namespace, "uid": "u", "generation": int64(1)},
			"spec":     spec,
		}}}
	}
	rule := func(namespace string, matched int, deactivated bool, policies ...any) listpage.Listed {
		var summary *status.RuleSummary
		if matched >= 0 {
			summary = &status.RuleSummary{Matched: matched, States: map[report.State]int{report.StateWaiting: matched}}
		}
		return ruleWith(namespace, summary, deactivated, policies...)
	}
	s := &Sweeper{cfg: Config{TrustedNamespaces: []string{"platform"}}}
	r := &sweepRun{status: record.StatusLocation{Subresource: true}}
	for _, tt := range []struct {
		name string
		rule listpage.Listed
		want bool
	}{
		{"matched many, checks pods", rule("platform", probe.PodIndexAfter+1, false, ttl, pods), true},
		{"no status yet", rule("platform", -1, false, pods), false},
		{"matched few", rule("platform", probe.PodIndexAfter, false, pods), false},
		{"no PODS_SUCCEED", rule("platform", 5000, false, ttl), false},
		{"paused", rule("platform", 5000, true, pods), false},
		{"not in a trusted namespace", rule("team-a", 5000, false, pods), false},
		{"invalid", rule("platform", 5000, false, map[string]any{"name": "broken"}), false},
		{"most governed", ruleWith("platform", &status.RuleSummary{Matched: 5000, States: map[report.State]int{report.StateGoverned: 4950, report.StateWaiting: 50}}, false, pods), false},
		{"states by shard, many waiting", ruleWith("platform", &status.RuleSummary{Matched: 5000, States: map[report.State]int{report.StateGoverned: 10, report.StateWaiting: 101}}, false, pods), true},
		{"no states yet", ruleWith("platform", &status.RuleSummary{Matched: probe.PodIndexAfter + 1}, false, pods), true},
	} {
		if got, _, _ := s.readsAhead(r, tt.rule); got != tt.want {
			t.Errorf("%s: readsAhead (pods) = %v, want %v", tt.name, got, tt.want)
		}
	}
	// An IDLE rule reads the activity index past ActivityIndexAfter
	// namespaces, and the pods index only past PodIndexAfter.
	idle := map[string]any{"name": "idle", "condition": map[string]any{"type": "IDLE", "params": map[string]any{"idleSeconds": int64(3600)}}, "action": map[string]any{"type": "DELETE"}}
	for _, tt := range []struct {
		name                 string
		rule                 listpage.Listed
		wantPods, wantActive bool
	}{
		{"IDLE, matched few", rule("platform", probe.ActivityIndexAfter, false, idle, pods), false, false},
		{"IDLE, matched more", rule("platform", probe.ActivityIndexAfter+1, false, idle, pods), false, true},
		{"IDLE, matched many", rule("platform", probe.PodIndexAfter+1, false, idle, pods), true, true},
		{"no IDLE, matched many", rule("platform", probe.PodIndexAfter+1, false, ttl), false, false},
		{"IDLE, paused", rule("platform", 5000, true, idle), false, false},
	} {
		gotPods, gotActivity, m := s.readsAhead(r, tt.rule)
		if gotPods != tt.wantPods || gotActivity != tt.wantActive {
			t.Errorf("%s: readsAhead = %v, %v; want %v, %v", tt.name, gotPods, gotActivity, tt.wantPods, tt.wantActive)
		}
		// The rule parsed: what the sweep asks the traffic queries of.
		if gotActivity && (len(m.Policies) == 0 || m.Policies[0].Name != "idle") {
			t.Errorf("%s: readsAhead's rule has policies %v, want the rule's, idle first", tt.name, m.Policies)
		}
	}
	// An OWNER_GONE rule that evaluated a namespace lists the owners ahead,
	// while it stands.
	orphans := map[string]any{"name": "orphans", "condition": map[string]any{"type": "OWNER_GONE", "params": map[string]any{"graceSeconds": int64(0)}}, "action": map[string]any{"type": "DELETE"}}
	for _, tt := range []struct {
		name string
		rule listpage.Listed
		want bool
	}{
		{"OWNER_GONE, evaluated one", rule("platform", 1, false, ttl, orphans), true},
		{"OWNER_GONE, no status yet", rule("platform", -1, false, orphans), false},
		{"OWNER_GONE, matched none", rule("platform", 0, false, orphans), false},
		{"no OWNER_GONE", rule("platform", 5000, false, ttl, pods), false},
		{"OWNER_GONE, paused", rule("platform", 5000, true, orphans), false},
		{"OWNER_GONE, not in a trusted namespace", rule("team-a", 5000, false, orphans), false},
	} {
		if got := weighsOwners(s.cfg, r, tt.rule); got != tt.want {
			t.Errorf("%s: weighsOwners = %v, want %v", tt.name, got, tt.want)
		}
	}
	// Four shards: the one owning the rule evaluates about a quarter.
	s.cfg.ShardCount = 4
	if got, _, _ := s.readsAhead(r, ruleWith("platform", &status.RuleSummary{Matched: 4 * probe.PodIndexAfter}, false, pods)); got {
		t.Errorf("4 shards, %d matched, no states: readsAhead (pods) = true, want false", 4*probe.PodIndexAfter)
	}
}

func TestStuckCauseIgnoresCounts(t *testing.T) {
	since := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	stuck := func(msg string, reason string) *report.Stuck {
		return &report.Stuck{Since: since, Reasons: []report.StuckReason{{Reason: reason, Message: msg}}}
	}
	was := stuck("example.com/hold in 3 resource instances", report.StuckFinalizersRemaining)
	if got := status.SameCause(was, stuck("example.com/hold in 1 resource instances", report.StuckFinalizersRemaining)); got != was {
		t.Errorf("fewer objects left: kept %+v, want the record as stored", got)
	}
	if got := status.SameCause(was, stuck("example.com/renamed in 1 resource instances", report.StuckFinalizersRemaining)); got != was {
		t.Errorf("a finalizer renamed (a tenant may, at every sweep): kept %+v, want the record as stored", got)
	}
	other := stuck("widgets.example.com has 1 resource instances", report.StuckContentRemaining)
	if got := status.SameCause(was, other); got != other {
		t.Errorf("another reason: kept %+v, want the new cause", got)
	}
	if got := status.SameCause(was, nil); got != nil {
		t.Errorf("not stuck any more: kept %+v, want none", got)
	}
	if (*report.Stuck)(nil).Cause() != "" {
		t.Error("no stuck record has a cause")
	}
}

// A rule's status lists its first 10 stuck namespaces by name, each as
// first seen with its cause; a sweep that finds the same causes (counts
// aside), or cannot read a listed namespace, tells nothing new, and a
// namespace past the first 10 is told once it is listed.
func TestRuleKeepsStuck(t *testing.T) {
	since := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	entries := func(n int, count string) []report.Entry {
		var out []report.Entry
		for i := range n {
			out = append(out, report.Entry{Target: fmt.Sprintf("ns-%02d", i), State: report.StateTargetTerminating,
				Stuck: &report.Stuck{Since: since, Reasons: []report.StuckReason{{Reason: report.StuckContentRemaining, Message: "widgets has " + count + " resource instances"}}}})
		}
		return out
	}
	var first status.RuleSummary
	if told := keepStuck(&first, entries(12, "3"), nil); len(told) != status.MaxLatest || len(first.Stuck) != status.MaxLatest || first.Stuck[9].Namespace != "ns-09" {
		t.Fatalf("first sweep: told %d, listed %+v; want the first %d by name", len(told), first.Stuck, status.MaxLatest)
	}
	var again status.RuleSummary
	if told := keepStuck(&again, entries(12, "1"), &first); len(told) != 0 || !strings.Contains(again.Stuck[0].Reasons[0].Message, "has 3 resource") {
		t.Errorf("same causes, fewer objects: told %q, listed %+v; want nothing told, the record as first seen", told, again.Stuck[0])
	}
	unread := entries(12, "1")
	unread[0].Stuck = nil
	var third status.RuleSummary
	if told := keepStuck(&third, unread, &again); len(told) != 0 || len(third.Stuck) != status.MaxLatest || third.Stuck[0].Namespace != "ns-00" {
		t.Errorf("ns-00 not read: told %q, listed %+v; want it kept as stored", told, third.Stuck)
	}
	var fourth status.RuleSummary
	if told := keepStuck(&fourth, entries(12, "1")[1:], &third); len(told) != 1 || !strings.Contains(told[0], "ns-10") {
		t.Errorf("ns-00 gone: told %q; want ns-10, now listed, told once", told)
	}
}

// A rule whose last status counts more than probe.AwakeIndexAfter
// namespaces asleep has them asked about from the index, from the first.
func TestSleepsAhead(t *testing.T) {
	for _, tt := range []struct {
		name string
		st   status.Status
		want bool
	}{
		{name: "no status"},
		{name: "few asleep", st: status.Status{Rule: &status.RuleSummary{States: map[report.State]int{report.StateAsleep: probe.AwakeIndexAfter}}}},
		{name: "many asleep", st: status.Status{Rule: &status.RuleSummary{States: map[report.State]int{report.StateAsleep: probe.AwakeIndexAfter + 1}}}, want: true},
		{name: "many waiting", st: status.Status{Rule: &status.RuleSummary{States: map[report.State]int{report.StateWaiting: 5 * probe.AwakeIndexAfter}}}},
	} {
		if got := sleepsAhead(tt.st); got != tt.want {
			t.Errorf("%s: sleepsAhead = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// bounded calls each fn once, never more than the sweep's slots at once
// across callers side by side.
func TestBoundedSharesItsSlots(t *testing.T) {
	const slots, n = 4, 300
	r := &sweepRun{pairSlots: make(chan struct{}, slots)}
	var running, most atomic.Int64
	calls := make([]atomic.Int64, 2*n)
	var wg sync.WaitGroup
	for caller := range 2 {
		wg.Go(func() {
			r.bounded(n, func(i int) {
				now := running.Add(1)
				for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
				}
				time.Sleep(100 * time.Microsecond)
				calls[caller*n+i].Add(1)
				running.Add(-1)
			})
		})
	}
	wg.Wait()
	for i := range calls {
		if c := calls[i].Load(); c != 1 {
			t.Fatalf("call %d made %d times, want once", i, c)
		}
	}
	if m := most.Load(); m > slots {
		t.Errorf("%d calls at once, over the %d slots", m, slots)
	}
}

// TestPairEntryCameBack: a pair's entry says its namespace came back when
// the rule's latest actions hold a DELETE of its name that succeeded
// before the namespace was made, the latest such; not for a DELETE that
// failed, an action that removes nothing, one after the namespace was
// made, or another name.
func TestPairEntryCameBack(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	at := func(minutes int) time.Time { return now.Add(time.Duration(minutes) * time.Minute) }
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.consol.de/v1beta1", "kind": "NamespaceManager",
		"metadata": map[string]any{"name": "previews", "namespace": "rules", "uid": "u", "generation": int64(1)},
		"spec": map[string]any{"namePatterns": []any{"pr-*"}, "policies": []any{map[string]any{"name": "late",
			"condition": map[string]any{"type": "TTL", "params": map[string]any{"ttlSeconds": int64(60)}}, "action": map[string]any{"type": "DELETE"}}}},
	}}
	m, problems := policy.Parse(obj)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	latest := []status.PairAction{
		{Namespace: "pr-1", Action: "DELETE", Result: report.ResultSucceeded, Time: at(-30)},
		{Namespace: "pr-1", Action: "DELETE", Result: report.ResultSucceeded, Time: at(-20)},
		{Namespace: "pr-2", Action: "DELETE", Result: report.ResultFailed, Time: at(-20)},
		{Namespace: "pr-3", Action: "SCALE_DOWN", Result: report.ResultSucceeded, Time: at(-20)},
		{Namespace: "pr-4", Action: "DELETE", Result: report.ResultSucceeded, Time: at(-5)},
	}
	s := &Sweeper{cfg: Config{MaxHold: decide.DefaultMaxHold}}
	ru := s.newRuleRun(&sweepRun{now: now}, obj, m, status.Status{Rule: &status.RuleSummary{Latest: latest}})
	want := map[string]*report.CameBack{"pr-1": {Deleted: at(-20), Created: at(-10)}}
	for _, name := range []string{"pr-1", "pr-2", "pr-3", "pr-4", "pr-5"} {
		e := ru.entry(cluster.Namespace{Name: name, Created: at(-10)})
		if got := e.CameBack; (got == nil) != (want[name] == nil) || got != nil && *got != *want[name] || e.Target != name || e.Name != "previews" {
			t.Errorf("%s: entry %s/%s on %s, came back %+v; want %+v", name, e.Namespace, e.Name, e.Target, got, want[name])
		}
	}
}
