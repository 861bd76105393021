package bench

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nsman/nsman/internal/owner"
	"github.com/nsman/nsman/report"
)

// The tests in this file need no control plane: they check what the
// generator writes, from rows made up for them.

// syntheticReclaimReads are what a DELETE sweep of 1,000 reads of what its
// DELETEs free: three lists for each of the first 32 namespaces, then one
// page of each cluster-wide.
var syntheticReclaimReads = map[string]int{"list pods": 33, "list persistentvolumeclaims": 33, "list services": 33}

// syntheticRows are the rows of the managers' part at size n, with the
// DELETE sweep's writes delWrites, as measureSize makes them.
func syntheticRows(n, due int, delWrites map[string]int, load string) []measurement {
	s := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	lists := map[string]int{"list namespacemanagers": n / 500, "list namespaces": n/500 + 1}
	with := func(extras ...map[string]int) map[string]int {
		m := map[string]int{}
		for k, v := range lists {
			m[k] = v
		}
		for _, extra := range extras {
			for k, v := range extra {
				m[k] += v
			}
		}
		return m
	}
	waiting := map[report.State]int{report.StateWaiting: n}
	fired := map[report.State]int{report.StateWaiting: n, report.StateFired: due}
	runs := func(a, b, c float64) []time.Duration { return []time.Duration{s(a), s(b), s(c)} }
	rows := []measurement{
		{What: "nsman sweep, first (records status)", Wall: s(2), Audited: with(map[string]int{"patch namespacemanagers/status": n}), MaxRSS: 30 << 10, States: waiting},
		{What: readFloorLabel, Wall: s(0.2), Audited: with(nil), Runs: runs(0.2, 0.3, 0.1)},
		{What: "floor + pods checks (16 workers)", Wall: s(0.4), Audited: with(map[string]int{"list pods": n / 2})},
		{What: noopLabel, Wall: s(0.18), Audited: with(map[string]int{"list pods": 100}), HTTP: map[string]int{"get": 10}, MaxRSS: 35 << 10, PeakRSS: 50 << 10, States: waiting},
		{What: gogcLabel, Wall: s(0.2), Audited: with(nil), MaxRSS: 70 << 10, States: waiting},
		{What: deleteSweepLabel(due), Wall: s(2.4), Audited: with(delWrites, syntheticReclaimReads), MaxRSS: 40 << 10, PeakRSS: 41 << 10, States: fired, Runs: runs(2.4, 2.2, 2.6)},
		{What: noReclaimLabel(due), Wall: s(2), Audited: with(delWrites), MaxRSS: 39 << 10, PeakRSS: 40 << 10, States: fired, Runs: runs(2, 1.9, 2.1)},
		{What: writeFloorLabel(due), Wall: s(3), Audited: map[string]int{"patch namespacemanagers/status": due, "delete namespaces": due, "patch namespacemanagers": due}},
		{What: writeFloor2Label(due), Wall: s(2), Audited: map[string]int{"patch namespacemanagers/status": due, "delete namespaces": due}},
		{What: deleteFloorLabel(due), Wall: s(1), Audited: map[string]int{"delete namespaces": due}},
		{What: unthrottledLabel(due), Wall: s(2), Audited: with(delWrites, syntheticReclaimReads), MaxRSS: 40 << 10, States: fired},
		{What: shardsLabel(due, 2), Wall: s(2), Audited: with(delWrites, syntheticReclaimReads, syntheticReclaimReads), MaxRSS: 40 << 10, States: fired, Note: "shards: 500 fired in 2 s; 500 fired in 2 s"},
		{What: shardsLabel(due, 4), Wall: s(3), Audited: with(delWrites, syntheticReclaimReads, syntheticReclaimReads, syntheticReclaimReads, syntheticReclaimReads), MaxRSS: 40 << 10, States: fired, Note: "shards: …"},
	}
	for i := range rows {
		rows[i].N, rows[i].Load = n, load
	}
	return rows
}

// syntheticRules are the rows of the rule's part over n namespaces.
func syntheticRules(n, due int, delWrites map[string]int) []measurement {
	s := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	rows := []measurement{
		{What: "nsman sweep, first (records the rule's status)", Wall: s(1), Audited: map[string]int{"patch namespacemanagers/status": 1}, MaxRSS: 50 << 10, States: map[report.State]int{report.StateWaiting: n}},
		{What: readFloorLabel, Wall: s(0.25), Audited: map[string]int{"list namespaces": 21}},
		{What: "floor + paged LIST of pods not succeeded", Wall: s(0.45), Audited: map[string]int{"list namespaces": 21, "list pods": 21}},
		{What: noopLabel, Wall: s(0.5), Audited: map[string]int{"list namespaces": 21, "list pods": 21}, MaxRSS: 55 << 10, States: map[report.State]int{report.StateWaiting: n}},
		{What: deleteSweepLabel(due), Wall: s(4), Audited: delWrites, MaxRSS: 56 << 10, States: map[report.State]int{report.StateFired: due, report.StateWaiting: n - due}},
		{What: ruleWriteFloorLabel(due), Wall: s(2), Audited: map[string]int{"patch namespaces": due, "delete namespaces": due}},
	}
	for i := range rows {
		rows[i].N, rows[i].Load = n, "1.50"
	}
	return rows
}

// syntheticIdle are the rows of the part with half of n managers IDLE, as
// measureIdle makes them: the no-op sweep takes noop seconds, against 0.25
// for the floor with the activity lists.
func syntheticIdle(n int, noop float64) []measurement {
	s := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	lists := map[string]int{"list namespacemanagers": n / 500, "list namespaces": n/500 + 1}
	// activity are per lists of each activity resource: 32 namespaces'
	// and one cluster-wide page for a sweep, one page for the floor.
	activity := func(per int) map[string]int {
		return map[string]int{"list pods": per, "list replicasets": per, "list controllerrevisions": per, "list jobs": per}
	}
	with := func(ms ...map[string]int) map[string]int {
		out := map[string]int{}
		for _, m := range ms {
			for k, v := range m {
				out[k] += v
			}
		}
		return out
	}
	waiting := map[report.State]int{report.StateWaiting: n}
	rows := []measurement{
		{What: "nsman sweep, first (records status)", Wall: s(2), Audited: with(lists, activity(33), map[string]int{"patch namespacemanagers/status": n}), MaxRSS: 36 << 10, States: waiting},
		{What: readFloorLabel, Wall: s(0.2), Audited: lists, Runs: []time.Duration{s(0.2), s(0.21), s(0.19)}},
		{What: idleFloorLabel, Wall: s(0.25), Audited: with(lists, activity(1)), Note: "0 pods, 0 replicasets, 500 controllerrevisions, 0 jobs"},
		{What: noopLabel, Wall: s(noop), Audited: with(lists, activity(33)), HTTP: map[string]int{"get": 138}, MaxRSS: 37 << 10, PeakRSS: 39 << 10, States: waiting,
			Note: "the last ended 54 s before the IDLE policies hold"},
	}
	for i := range rows {
		rows[i].N, rows[i].Load = n, "1.20"
	}
	return rows
}

func syntheticReport(delWrites map[string]int, tree treeState) benchRun {
	const due = 1000
	rep := benchRun{
		Sizes: []int{1000, 10000}, Due: due, KubeVersion: "v1.36.3", Began: time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC),
		Tree: tree, Nsman: "nsman " + tree.Describe + " go1.26.8 linux/amd64",
		Flags:   map[string]string{"concurrency": "16", "qps": "500", "burst": "1000"},
		GoBench: "BenchmarkParse-2 13 81540474 ns/op\n", GoPkgs: []string{"github.com/nsman/nsman/policy"},
	}
	rep.Rows = append(syntheticRows(1000, due, delWrites, "0.90"), syntheticRows(10000, due, delWrites, "3.10")...)
	rep.Rules = syntheticRules(10000, due, map[string]int{"list namespaces": 21, "patch namespaces": due, "delete namespaces": due, "create events": 1, "patch namespacemanagers/status": 1})
	rep.Idle = syntheticIdle(1000, 0.3)
	rep.Hostile = syntheticHostile(80 << 10)
	return rep
}

// targetRow is the targets table's row for what at n.
func targetRow(t *testing.T, doc string, n int, what string) string {
	t.Helper()
	for line := range strings.SplitSeq(doc, "\n") {
		if strings.HasPrefix(line, "| "+strconv.Itoa(n)+" | "+what) {
			return line
		}
	}
	t.Fatalf("no target %q at %d in:\n%s", what, n, doc)
	return ""
}

func TestRenderClaimThenDelete(t *testing.T) {
	tree := treeState{Commit: strings.Repeat("a", 40), Describe: "aaaaaaa"}
	doc := render(syntheticReport(map[string]int{"patch namespacemanagers/status": 1000, "delete namespaces": 1000}, tree))

	for _, want := range []string{
		"from commit `" + tree.Commit + "` (`git describe --always --dirty`: `aaaaaaa`)",
		"no uncommitted changes",
		"`nsman version` says `nsman aaaaaaa",
		"`--concurrency 16 --qps 500 --burst 1000`",
		"## Managers", "## Writes per due manager", "## One rule over 10000 namespaces", "## Targets",
		"## Growth from 1000 to 10000", "## Sharding", "## Analysis", "## Go benchmarks", "BenchmarkParse-2",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("document lacks %q", want)
		}
	}
	for _, not := range []string{"hand-written", "kept by make bench", "NaN", "Inf", "%!", "\n\n\n"} {
		if strings.Contains(doc, not) {
			t.Errorf("document holds %q", not)
		}
	}
	// The writes per due manager are counted, not assumed.
	if !strings.Contains(doc, "| 1000 | nsman sweep, 1000 due for DELETE | 2000 | 2 | delete namespaces 1, patch namespacemanagers/status 1 | – |") {
		t.Errorf("writes per due manager of the claiming sweep not as audited:\n%s", section(doc, "## Writes per due manager"))
	}
	if !strings.Contains(doc, "| delete floor: 1000 × DELETE (UID + resourceVersion preconditions), 16 workers | 1000 | 1 | delete namespaces 1 | – |") {
		t.Errorf("writes per due manager of the delete floor:\n%s", section(doc, "## Writes per due manager"))
	}
	// The rule's once-per-sweep writes are told apart.
	if !strings.Contains(doc, "| 2002 | 2 | delete namespaces 1, patch namespaces 1 | create events 1, patch namespacemanagers/status 1 |") {
		t.Errorf("rule's writes:\n%s", section(doc, "## Writes per due manager"))
	}

	// Targets, computed from the rows: at 10,000 the no-op sweep is 0.18 s
	// against 0.2 s; the DELETE sweep 2.4 s against 1 s (delete floor),
	// 2 s (claim, delete), 3 s (claim, delete, deactivate) and 2 s (the
	// same sweep with --reclaim=false).
	for _, c := range []struct {
		n         int
		what, has string
		met       string
	}{
		{1000, "no-op sweep ≤ 1.0 × read floor", "= 0.90×", "– (set at 10000)"},
		{10000, "no-op sweep ≤ 1.0 × read floor", "0.18 s (#", "yes"},
		{10000, "zero writes in a no-op sweep", "0 (#", "yes"},
		{10000, "peak RSS ≤ 64 MiB", "50.0 MiB (#17; no-op sweeps up to 50.0 MiB, DELETE sweeps up to 41.0 MiB)", "yes"},
		{10000, "1000 DELETEs ≤ 2.5 × write floor (claim, delete, deactivate)", "= 0.80×", "yes"},
		{10000, "1000 DELETEs of their own namespace ≤ 1.3 × write floor (claim, delete)", "= 1.20×", "– (set at 1000)"},
		{10000, "1000 self-contained DELETEs ≤ 1.2 × delete floor", "= 2.40×", "– (set at 1000)"},
		{1000, "1000 self-contained DELETEs ≤ 1.2 × delete floor", "= 2.40×", "**no**"},
		{1000, "1000 DELETEs of their own namespace ≤ 1.3 × write floor (claim, delete)", "= 1.20×", "yes"},
		{1000, "1000 DELETEs with reclaim ≤ 1.3 × without", "2.40 s (#6) / 2.00 s (#7) = 1.20× (0.40 s more, +99 requests (2104 vs 2005; more: list persistentvolumeclaims 33, list pods 33, list services 33))", "yes"},
		{10000, "1000 DELETEs with reclaim ≤ 1.3 × without", "= 1.20×", "– (set at 1000)"},
		{10000, "writes of the 1000-DELETE sweep ≤ the delete floor's", "2000 (#", "**no**"},
		{10000, "rule: no-op sweep ≤ 1.3 × read floor", "= 2.00×", "**no**"},
		{10000, "rule: 1000 DELETEs ≤ 2.5 × write floor (annotate, delete)", "= 2.00×", "yes"},
	} {
		row := targetRow(t, doc, c.n, c.what)
		if !strings.Contains(row, c.has) || !strings.Contains(row, "| "+c.met+" |") {
			t.Errorf("target %q at %d: %s\nwant %q and met %s", c.what, c.n, row, c.has, c.met)
		}
	}
	// The GOGC=100 diagnostic does not count toward peak RSS.
	if strings.Contains(targetRow(t, doc, 1000, "peak RSS"), "70.0 MiB (") {
		t.Errorf("peak RSS counts the GOGC=100 diagnostic: %s", targetRow(t, doc, 1000, "peak RSS"))
	}
	// The analysis cites its rows and counts the targets missed.
	an := section(doc, "## Analysis")
	for _, want := range []string{"**Targets.** ", "not met", "2 per fired manager (delete namespaces 1, patch namespacemanagers/status 1)",
		"where the delete floor writes 1 per manager", "2.40× the delete floor's", "widest spread is #"} {
		if !strings.Contains(strings.ToLower(an), strings.ToLower(want)) {
			t.Errorf("analysis lacks %q:\n%s", want, an)
		}
	}
	// Every row the document cites exists.
	full := syntheticReport(nil, tree)
	rows := len(full.Rows) + len(full.Rules) + len(full.Idle) + len(full.Hostile)
	for _, m := range regexp.MustCompile(`#(\d+)`).FindAllStringSubmatch(doc, -1) {
		if id, _ := strconv.Atoi(m[1]); id < 1 || id > rows {
			t.Errorf("document cites row #%s of %d", m[1], rows)
		}
	}
}

// A DELETE that is its own claim: one write per manager; nothing in the
// generator expects two.
func TestRenderSelfContainedDelete(t *testing.T) {
	tree := treeState{Commit: strings.Repeat("b", 40), Describe: "bbbbbbb"}
	doc := render(syntheticReport(map[string]int{"delete namespaces": 1000}, tree))
	if !strings.Contains(doc, "| 1000 | nsman sweep, 1000 due for DELETE | 1000 | 1 | delete namespaces 1 | – |") {
		t.Errorf("writes per due manager:\n%s", section(doc, "## Writes per due manager"))
	}
	row := targetRow(t, doc, 1000, "writes of the 1000-DELETE sweep ≤ the delete floor's")
	if !strings.Contains(row, "1000 (#") || !strings.Contains(row, "| yes |") {
		t.Errorf("writes target: %s", row)
	}
	if an := section(doc, "## Analysis"); !strings.Contains(an, "1 per fired manager (delete namespaces 1)") {
		t.Errorf("analysis:\n%s", an)
	}
}

func TestRenderModifiedTree(t *testing.T) {
	tree := treeState{Commit: strings.Repeat("c", 40), Describe: "ccccccc-dirty", Changes: []string{" M sweep/sweep.go", "?? sweep/new.go"}}
	rep := syntheticReport(map[string]int{"delete namespaces": 1000}, tree)
	rep.AllowModified = true
	after := tree
	after.Changes = append(after.Changes, " M README.md")
	rep.ChangedTo = &after
	doc := render(rep)
	for _, want := range []string{"**The tree was modified**", "M sweep/sweep.go", "?? sweep/new.go", allowModifiedEnv + "=1",
		"**The tree changed during the run**"} {
		if !strings.Contains(doc, want) {
			t.Errorf("document lacks %q:\n%s", want, doc[:min(len(doc), 2000)])
		}
	}
	if strings.Contains(doc, "no uncommitted changes") {
		t.Errorf("a modified tree's document says it had none")
	}
}

// section is doc from the heading on, up to the next heading of level 2.
func section(doc, heading string) string {
	_, rest, ok := strings.Cut(doc, heading)
	if !ok {
		return ""
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return heading + rest
}

// A partial run renders the part it measured, with no gaps.
func TestRenderOnePart(t *testing.T) {
	tree := treeState{Commit: strings.Repeat("d", 40), Describe: "ddddddd"}
	full := syntheticReport(map[string]int{"delete namespaces": 1000}, tree)

	rules := full
	rules.Rows, rules.Sizes, rules.Idle, rules.GoBench, rules.Partial = nil, nil, nil, "", []string{"NSMAN_BENCH_ONLY=rules"}
	managers := full
	managers.Rules, managers.Idle, managers.Sizes, managers.Rows = nil, nil, []int{1000}, full.Rows[:len(full.Rows)/2]
	idle := full
	idle.Rows, idle.Rules, idle.Sizes, idle.Partial = nil, nil, nil, []string{"NSMAN_BENCH_ONLY=idle"}
	for name, rep := range map[string]benchRun{"rules": rules, "managers at 1000": managers, "idle": idle} {
		doc := render(rep)
		for _, not := range []string{"\n\n\n", "NaN", "Inf", "%!"} {
			if strings.Contains(doc, not) {
				t.Errorf("%s: document holds %q:\n%s", name, not, doc)
			}
		}
		if !strings.Contains(doc, "## Analysis") || !strings.Contains(doc, "## Targets") {
			t.Errorf("%s: no targets or analysis", name)
		}
	}
	if doc := render(rules); strings.Contains(doc, "## Managers") || !strings.Contains(doc, "Generated by a partial run of test/bench (NSMAN_BENCH_ONLY=rules)") {
		t.Errorf("rules alone:\n%s", doc)
	}
	doc := render(idle)
	if strings.Contains(doc, "## Managers") || strings.Contains(doc, "## One rule") || !strings.Contains(doc, "## 1000 managers, half of them IDLE (issue 25)") ||
		!strings.Contains(doc, "| #4 | 1000 | nsman sweep, no-op (nothing due) |") || !strings.Contains(doc, "**Peak RSS.** 1000 managers, half of them IDLE: 39.0 MiB (#4).") {
		t.Errorf("IDLE alone:\n%s", doc)
	}
}

// The DELETE sweep with --reclaim=false is a row of its own, its median
// interleaved with the DELETE sweep's; the target compares the two at
// 1,000 managers and misses when reading what the DELETEs free costs more
// than the bound.
func TestRenderReclaim(t *testing.T) {
	tree := treeState{Commit: strings.Repeat("e", 40), Describe: "eeeeeee"}
	rep := syntheticReport(map[string]int{"delete namespaces": 1000}, tree)
	for i, m := range rep.Rows {
		if m.N == 1000 && m.What == noReclaimLabel(1000) {
			rep.Rows[i].Wall = 1500 * time.Millisecond // 2.4 s against 1.5 s: 1.60×
		}
	}
	doc := render(rep)

	// Both rows show their requests by verb: the reclaim's lists in the
	// DELETE sweep's, none in the other.
	managers := section(doc, "## Managers")
	for _, want := range []string{
		"| #6 | 1000 | nsman sweep, 1000 due for DELETE | 2.40 s | 1104 | 1000 | delete namespaces 1000, list namespacemanagers 2, list namespaces 3, list persistentvolumeclaims 33, list pods 33, list services 33 |",
		"| #7 | 1000 | nsman sweep --reclaim=false, 1000 due for DELETE | 1.50 s | 1005 | 1000 | delete namespaces 1000, list namespacemanagers 2, list namespaces 3 |",
	} {
		if !strings.Contains(managers, want) {
			t.Errorf("managers' table lacks %q:\n%s", want, managers)
		}
	}
	if w := section(doc, "## Writes per due manager"); !strings.Contains(w, "| #7 | 1000 | nsman sweep --reclaim=false, 1000 due for DELETE | 1000 | 1 | delete namespaces 1 | – |") {
		t.Errorf("writes per due manager of the sweep with --reclaim=false:\n%s", w)
	}
	if m := section(doc, "## How it is measured"); !strings.Contains(m, "5 sets of 1000 more managers") || !strings.Contains(m, "`--reclaim=false`") {
		t.Errorf("method does not tell of the sweep with --reclaim=false:\n%s", m)
	}

	row := targetRow(t, doc, 1000, "1000 DELETEs with reclaim ≤ 1.3 × without")
	for _, want := range []string{"2.40 s (#6) / 1.50 s (#7) = 1.60×", "0.90 s more, +99 requests (1104 vs 1005; more: list persistentvolumeclaims 33, list pods 33, list services 33)", "| **no** | 24 |"} {
		if !strings.Contains(row, want) {
			t.Errorf("reclaim target: %s\nwant %q", row, want)
		}
	}
	if row := targetRow(t, doc, 10000, "1000 DELETEs with reclaim ≤ 1.3 × without"); !strings.Contains(row, "= 1.20×") || !strings.Contains(row, "| – (set at 1000) |") {
		t.Errorf("reclaim target at 10000: %s", row)
	}
	if !strings.Contains(doc, "issues 6, 12, 13, 24 (what a sweep's DELETEs free") {
		t.Errorf("sources do not name issue 24")
	}
	an := section(doc, "## Analysis")
	for _, want := range []string{
		"Not met: 1000 self-contained DELETEs ≤ 1.2 × delete floor at 1000",
		"1000 DELETEs with reclaim ≤ 1.3 × without at 1000 (2.40 s (#6) / 1.50 s (#7) = 1.60×",
		"With `--reclaim=false` the same sweep took 1.50 s (#7); reading what the DELETEs free made it 1.60× that: 0.90 s more, +99 requests",
	} {
		if !strings.Contains(an, want) {
			t.Errorf("analysis lacks %q:\n%s", want, an)
		}
	}
}

// The part with half the managers IDLE (issue 25): its own section after
// the rule's, numbered on from it, its method, its targets against the
// read floor with the activity lists, and its analysis.
func TestRenderIdle(t *testing.T) {
	tree := treeState{Commit: strings.Repeat("f", 40), Describe: "fffffff"}
	doc := render(syntheticReport(map[string]int{"delete namespaces": 1000}, tree))

	heading := "## 1000 managers, half of them IDLE (issue 25)"
	rule, idle, writes := strings.Index(doc, "## One rule over"), strings.Index(doc, heading), strings.Index(doc, "## Writes per due manager")
	if idle < 0 || !(rule < idle && idle < writes) {
		t.Fatalf("no section %q between the rule's and the writes per due manager:\n%s", heading, doc)
	}
	sec := section(doc, heading)
	for _, want := range []string{
		"A fresh control plane of its own for each size up to 1000 (N = 1000), where the targets are set",
		"(idleSeconds 60) → DELETE, then N/2 with `TTL` 86400 s → DELETE (not due)",
		"`nsman.k8s.consol.de/touched`", "for the first 32\nnamespaces of a sweep (probe.ActivityIndexAfter)",
		"until the IDLE namespaces are 60 s old, then creates one ControllerRevision in each",
		"measured 3 times, interleaved", "(metadata only, page size 500) of each of pods, ReplicaSets,\nControllerRevisions and Jobs, cluster-wide",
		"the generator fails the run if one does not",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("IDLE section lacks %q:\n%s", want, sec)
		}
	}
	if rules := section(doc, "## One rule over"); !strings.Contains(rules, "| #32 | 10000 | write floor: 1000 × (annotate, delete), 16 workers |") {
		t.Errorf("the rule's rows are not numbered as before:\n%s", rules)
	}
	for _, want := range []string{
		"| #33 | 1000 | nsman sweep, first (records status) | 2.00 s | 1137 | 1000 |",
		"| #34 | 1000 | floor: paged LIST of managers + namespaces | 0.20 s | 5 | 0 |",
		"| #35 | 1000 | floor + paged LIST of pods, ReplicaSets, ControllerRevisions, Jobs | 0.25 s | 9 | 0 | list controllerrevisions 1, list jobs 1, list namespacemanagers 2, list namespaces 3, list pods 1, list replicasets 1 |",
		"| #36 | 1000 | nsman sweep, no-op (nothing due) | 0.30 s | 137 | 0 |",
		"waiting 1000; the last ended 54 s before the IDLE policies hold |",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("IDLE table lacks %q:\n%s", want, sec)
		}
	}

	row := targetRow(t, doc, 1000, "IDLE: no-op sweep ≤ 1.3 × read floor incl. the activity lists")
	if want := "| 0.30 s (#36) / 0.25 s (#35) = 1.20× (floor without them: 0.20 s (#34), 1.50×) | yes | 25 |"; !strings.Contains(row, want) {
		t.Errorf("IDLE no-op target: %s\nwant %q", row, want)
	}
	if row := targetRow(t, doc, 1000, "IDLE: zero writes in a no-op sweep"); !strings.Contains(row, "| 0 (#36) | yes | 25 |") {
		t.Errorf("IDLE writes target: %s", row)
	}
	if !strings.Contains(doc, ", 25 (what IDLE reads), 31 (a hostile tenant)") {
		t.Errorf("sources do not name issue 25")
	}
	an := section(doc, "## Analysis")
	for _, want := range []string{
		"**Targets.** 19 of the 21 targets",
		"**Half the managers IDLE.** At 1000 managers, the no-op sweep took 0.30 s (#36): 1.20× the read floor with the activity lists\n(0.25 s (#35)) and 1.50× the read floor (#34)",
		"it made 137 requests, 132 of them lists of pods, ReplicaSets,\nControllerRevisions and Jobs, where the floor with the activity lists made 9, 4 of them those lists (more: list controllerrevisions 32, list jobs 32, list pods 32, list replicasets 32)",
		"1000 managers, half of them IDLE: 39.0 MiB (#36).",
	} {
		if !strings.Contains(an, want) {
			t.Errorf("analysis lacks %q:\n%s", want, an)
		}
	}

	// A no-op sweep slower than the bound that writes: both targets missed.
	rep := syntheticReport(map[string]int{"delete namespaces": 1000}, tree)
	rep.Idle = syntheticIdle(1000, 0.4)
	rep.Idle[3].Audited["patch namespacemanagers/status"] = 3
	doc = render(rep)
	if row := targetRow(t, doc, 1000, "IDLE: no-op sweep ≤ 1.3 × read floor"); !strings.Contains(row, "= 1.60×") || !strings.Contains(row, "| **no** | 25 |") {
		t.Errorf("IDLE no-op target missed: %s", row)
	}
	if row := targetRow(t, doc, 1000, "IDLE: zero writes"); !strings.Contains(row, "| 3 (#36) | **no** | 25 |") {
		t.Errorf("IDLE writes target missed: %s", row)
	}
	if an := section(doc, "## Analysis"); !strings.Contains(an, "IDLE: no-op sweep ≤ 1.3 × read floor incl. the activity lists at 1000 (0.40 s (#36)") ||
		!strings.Contains(an, "IDLE: zero writes in a no-op sweep at 1000 (3 (#36))") {
		t.Errorf("analysis does not count the IDLE targets missed:\n%s", an)
	}

	// Measured at another size, the targets are not set there.
	rep = syntheticReport(map[string]int{"delete namespaces": 1000}, tree)
	rep.Idle = syntheticIdle(200, 0.3)
	doc = render(rep)
	if !strings.Contains(doc, "## 200 managers, half of them IDLE (issue 25)") {
		t.Errorf("no IDLE section at 200:\n%s", doc)
	}
	if row := targetRow(t, doc, 200, "IDLE: no-op sweep ≤ 1.3 × read floor"); !strings.Contains(row, "| – (set at 1000) | 25 |") {
		t.Errorf("IDLE target at 200: %s", row)
	}
}

// syntheticHostile is the hostile tenant's row, at peak RSS rss KiB.
func syntheticHostile(rss int64) []measurement {
	return []measurement{{N: hostileManagers, What: hostileSweepLabel(), Wall: 9 * time.Second, MaxRSS: rss,
		Audited: map[string]int{"list namespacemanagers": 2, "list jobs": 1, "delete namespaces": 40},
		States:  map[report.State]int{report.StateWaiting: hostileManagers, report.StateFired: hostileRuleNamespaces}}}
}

// The hostile tenant's part has a section of its own, after the IDLE
// part's, and its target is met or missed by the sweep's peak RSS.
func TestRenderHostile(t *testing.T) {
	tree := treeState{Commit: strings.Repeat("e", 40), Describe: "eeeeeee"}
	rep := syntheticReport(map[string]int{"delete namespaces": 1000}, tree)
	doc := render(rep)
	heading := "## A hostile tenant (issue 31)"
	idle, hostile := strings.Index(doc, "## 1000 managers, half of them IDLE"), strings.Index(doc, heading)
	if hostile < 0 || hostile < idle {
		t.Fatalf("no section %q after the IDLE part's:\n%s", heading, doc)
	}
	sec := section(doc, heading)
	for _, want := range []string{"80 Running pods (`app=web`) and 80 Jobs", "300 managers\nof about 200 KiB each",
		"over 40 namespaces, past the 32 after", "| 300 | " + hostileSweepLabel() + " | 9.00 s | 43 | 40 |", "| 80.0 MiB |"} {
		if !strings.Contains(sec, want) {
			t.Errorf("hostile section lacks %q:\n%s", want, sec)
		}
	}
	what := "hostile tenant: peak RSS ≤ 96 MiB (the chart's limit is 128Mi)"
	if row := targetRow(t, doc, 300, what); !strings.Contains(row, "| 80.0 MiB (#") || !strings.Contains(row, "| yes | 31 |") {
		t.Errorf("target row %q, want 80.0 MiB met", row)
	}
	rep.Hostile = syntheticHostile(120 << 10)
	if row := targetRow(t, render(rep), 300, what); !strings.Contains(row, "| **no** | 31 |") {
		t.Errorf("target row %q at 120 MiB, want it missed", row)
	}
	if !strings.Contains(doc, "The hostile tenant: 80.0 MiB (#") {
		t.Errorf("the analysis does not say the hostile tenant's peak RSS")
	}
}

// syntheticSleep are the rows of the SLEEP rule's part over n namespaces,
// as measureSleep makes them: the sleep sweep takes sleep seconds against 2
// for its floor, the sweep while asleep asleep seconds against 0.1 for the
// read floor with the workload lists, the wake 2.5 s against 2; each sleep
// and wake writes perNamespace per namespace.
func syntheticSleep(n int, sleep, asleep float64, perNamespace map[string]int) []measurement {
	s := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	times := func(m map[string]int, k int) map[string]int {
		out := map[string]int{}
		for key, v := range m {
			out[key] = v * k
		}
		return out
	}
	with := func(ms ...map[string]int) map[string]int {
		out := map[string]int{}
		for _, m := range ms {
			for k, v := range m {
				out[k] += v
			}
		}
		return out
	}
	floorWrites := map[string]int{"patch namespaces": 2, "patch deployments": 2, "patch cronjobs": 1}
	lists := map[string]int{"list deployments": 1, "list statefulsets": 1, "list cronjobs": 1}
	managers := map[string]int{"list namespacemanagers": 1, "list namespaces": 1}
	once := map[string]int{"create events": 1, "patch namespacemanagers/status": 1}
	fired := map[report.State]int{report.StateFired: n}
	asleepStates := map[report.State]int{report.StateAsleep: n}
	rows := []measurement{
		{What: sleepSweepLabel(n), Wall: s(sleep), Audited: with(managers, times(lists, n), times(perNamespace, n), once), MaxRSS: 33 << 10, States: fired,
			Runs: []time.Duration{s(sleep), s(sleep + 0.5), s(sleep - 0.1)}},
		{What: sleepFloorLabel(n), Wall: s(2), Audited: times(floorWrites, n)},
		{What: firstAsleepLabel, Wall: s(0.3), Audited: with(managers, times(lists, 21), map[string]int{"patch namespacemanagers/status": 1}), MaxRSS: 32 << 10, States: asleepStates},
		{What: readFloorLabel, Wall: s(0.05), Audited: managers},
		{What: sleepListsPrefix + " (deployments, statefulsets, cronjobs)", Wall: s(0.1), Audited: with(managers, lists), Note: "300 deployments, 0 statefulsets, 150 cronjobs, none awake"},
		{What: asleepLabel, Wall: s(asleep), Audited: with(managers, lists), MaxRSS: 31 << 10, States: asleepStates},
		{What: wakeSweepLabel(n), Wall: s(2.5), Audited: with(managers, times(lists, n), times(perNamespace, n), once), MaxRSS: 34 << 10, States: fired},
		{What: wakeFloorLabel(n), Wall: s(2), Audited: times(floorWrites, n)},
	}
	for i := range rows {
		rows[i].N, rows[i].Load = n, "1.10"
	}
	return rows
}

// The SLEEP rule's part (issue 33) has a section of its own, after the
// hostile tenant's, and its targets are met or missed by the rows: the
// sleep and the wake against their write floors, the sweep while asleep
// against the read floor with the workload lists and by its writes, the
// writes per namespace against the floors'.
func TestRenderSleep(t *testing.T) {
	tree := treeState{Commit: strings.Repeat("a", 40), Describe: "aaaaaaa"}
	asFloor := map[string]int{"patch namespaces": 2, "patch deployments": 2, "patch cronjobs": 1}
	const (
		sleepWhat  = "SLEEP: sweep that puts 1000 namespaces to sleep ≤ 1.5 × its write floor"
		asleepWhat = "SLEEP: sweep while asleep ≤ 1.3 × read floor incl. the workload lists"
		zeroWhat   = "SLEEP: zero writes in a sweep while asleep"
		wakeWhat   = "SLEEP: sweep that wakes 1000 namespaces ≤ 1.5 × its write floor"
		writesWhat = "SLEEP: writes per namespace of the sleep and the wake = their write floors'"
	)
	for _, c := range []struct {
		name          string
		n             int
		sleep, asleep float64
		perNamespace  map[string]int
		asleepWrites  map[string]int
		want          map[string]string // target → "measured | met"
	}{
		{name: "met", n: 1000, sleep: 2.8, asleep: 0.12, perNamespace: asFloor, want: map[string]string{
			sleepWhat:  "2.80 s (#38) / 2.00 s (#39) = 1.40× | yes",
			asleepWhat: "0.12 s (#43) / 0.10 s (#42) = 1.20× (floor without them: 0.05 s (#41), 2.40×) | yes",
			zeroWhat:   "0 (#43) | yes",
			wakeWhat:   "2.50 s (#44) / 2.00 s (#45) = 1.25× | yes",
			writesWhat: "sleep 5 (#38) vs 5 (#39), wake 5 (#44) vs 5 (#45) | yes",
		}},
		{name: "slow sleep, slow and writing while asleep", n: 1000, sleep: 3.2, asleep: 0.2, perNamespace: asFloor,
			asleepWrites: map[string]int{"patch deployments": 4}, want: map[string]string{
				sleepWhat:  "= 1.60× | **no**",
				asleepWhat: "= 2.00× | **no**",
				zeroWhat:   "4 (#43) | **no**",
				wakeWhat:   "= 1.25× | yes",
			}},
		{name: "more writes than the floor", n: 1000, sleep: 2.8, asleep: 0.12,
			perNamespace: map[string]int{"patch namespaces": 3, "patch deployments": 2, "patch cronjobs": 1}, want: map[string]string{
				writesWhat: "sleep 6 (#38) vs 5 (#39), wake 6 (#44) vs 5 (#45) | **no**",
			}},
		{name: "at another size", n: 100, sleep: 3.2, asleep: 0.12, perNamespace: asFloor, want: map[string]string{
			"SLEEP: sweep that puts 100 namespaces to sleep ≤ 1.5 × its write floor": "= 1.60× | – (set at 1000)",
			asleepWhat: "= 1.20× | – (set at 1000)",
			zeroWhat:   "0 (#43) | yes",
		}},
	} {
		rep := syntheticReport(map[string]int{"delete namespaces": 1000}, tree)
		rep.Sleep = syntheticSleep(c.n, c.sleep, c.asleep, c.perNamespace)
		for k, v := range c.asleepWrites {
			rep.Sleep[5].Audited[k] = v
		}
		doc := render(rep)
		wantTargets(t, c.name, doc, c.n, c.want, "33 |")
	}

	rep := syntheticReport(map[string]int{"delete namespaces": 1000}, tree)
	rep.Sleep = syntheticSleep(1000, 2.8, 0.12, asFloor)
	doc := render(rep)
	heading := "## A SLEEP rule over 1000 namespaces of 3 workloads (issue 33)"
	hostile, sleep := strings.Index(doc, "## A hostile tenant"), strings.Index(doc, heading)
	if sleep < 0 || sleep < hostile {
		t.Fatalf("no section %q after the hostile tenant's:\n%s", heading, doc)
	}
	sec := section(doc, heading)
	for _, want := range []string{
		"at the largest size measured up to 1000 (N = 1000)", "the Deployments `web` and `api` of 1 replica and the CronJob `nightly`",
		"here deployments, statefulsets, cronjobs.", "for the first 20\n(probe.AwakeIndexAfter)",
		"- the sleep write floor, per namespace: the claim", "`nsman.k8s.consol.de/replicas-before-scale-down`",
		"5 writes, the requests nsman sends", "- the wake write floor", "decoding of each object its replicas, suspend or pause alone",
		"| #38 | 1000 | nsman sweep, SLEEP puts 1000 namespaces to sleep | 2.80 s | 8004 | 5002 |",
		"| #43 | 1000 | nsman sweep, while asleep (nothing to do) | 0.12 s | 5 | 0 |",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("SLEEP section lacks %q:\n%s", want, sec)
		}
	}
	an := section(doc, "## Analysis")
	for _, want := range []string{
		"**A SLEEP rule over 1000 namespaces.** The sweep that put them to sleep took 2.80 s (#38): 1.40× its write floor (2.00 s (#39)).\nIt made 8004 requests, 5002 of them writes",
		"per namespace patch cronjobs 1, patch deployments 2, patch namespaces 2, and create events 1, patch namespacemanagers/status 1 besides",
		"patch namespaces 2;\nits requests beyond the floor's: create events 1, list cronjobs 1000, list deployments 1000",
		"the next took 0.12 s (#43): 1.20× the read floor with the workload\nlists (0.10 s (#42))",
		"The sweep that woke them took 2.50 s (#44): 1.25× its write floor",
		"The SLEEP rule over 1000 namespaces: 34.0 MiB (#44).",
	} {
		if !strings.Contains(an, want) {
			t.Errorf("analysis lacks %q:\n%s", want, an)
		}
	}
	if !strings.Contains(doc, "31 (a hostile tenant)\nand 33 (sleep and wake)") {
		t.Errorf("sources do not name issue 33")
	}
}

// syntheticOwners are the rows of the owners part over n namespaces, as
// measureOwners makes them: the no-op sweep takes noop seconds against 0.1
// for the read floor with the owner lists and lists what noopLists says.
func syntheticOwners(n int, noop float64, noopLists map[string]int) []measurement {
	s := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	with := func(ms ...map[string]int) map[string]int {
		out := map[string]int{}
		for _, m := range ms {
			for k, v := range m {
				out[k] += v
			}
		}
		return out
	}
	gone := ownersGone(n)
	lists := map[string]int{"list namespacemanagers": 1, "list namespaces": 3}
	apps := map[string]int{"list applications": 2}
	reclaim := map[string]int{"list persistentvolumeclaims": 33, "list pods": 33, "list services": 33}
	waiting := map[report.State]int{report.StateWaiting: n}
	rows := []measurement{
		{What: ownersFirstLabel, Wall: s(3), Audited: with(lists, apps, map[string]int{"patch namespaces": n, "patch namespacemanagers/status": 1}), MaxRSS: 36 << 10, States: waiting},
		{What: readFloorLabel, Wall: s(0.03), Audited: lists},
		{What: ownersListsLabel([]owner.Kind{applicationKind()}), Wall: s(0.1), Audited: with(lists, apps), Note: fmt.Sprintf("%d applications", n)},
		{What: noopLabel, Wall: s(noop), Audited: with(lists, noopLists), MaxRSS: 37 << 10, States: waiting, Runs: []time.Duration{s(noop), s(noop + 0.05), s(noop - 0.01)}},
		{What: versionLabel, Wall: s(0.04), Audited: map[string]int{}, MaxRSS: 12 << 10},
		{What: ownersGoneLabel(gone), Wall: s(0.5), Audited: with(lists, apps, reclaim, map[string]int{"delete namespaces": gone, "create events": 1, "patch namespacemanagers/status": 1}),
			MaxRSS: 39 << 10, States: map[report.State]int{report.StateFired: gone, report.StateWaiting: n - gone}},
	}
	for i := range rows {
		rows[i].N, rows[i].Load = n, "1.30"
	}
	return rows
}

// The owners part (issue 46) has a section of its own, after the SLEEP
// rule's, and its targets are met or missed by the rows: the no-op sweep
// against the read floor with the owner lists and by its writes, each
// sweep's lists of each owner kind against the floor's one paged list.
func TestRenderOwners(t *testing.T) {
	tree := treeState{Commit: strings.Repeat("a", 40), Describe: "aaaaaaa"}
	const (
		noopWhat = "owners: no-op sweep ≤ 1.3 × read floor incl. the owner lists"
		zeroWhat = "owners: zero writes in a no-op sweep"
		onceWhat = "owners: one list per owner kind per sweep"
		rssWhat  = "owners: peak RSS ≤ 64 MiB, over every nsman sweep"
	)
	apps := map[string]int{"list applications": 2}
	for _, c := range []struct {
		name      string
		n         int
		noop      float64
		noopLists map[string]int
		want      map[string]string // target → "measured | met"
	}{
		{name: "met", n: 10000, noop: 0.12, noopLists: apps, want: map[string]string{
			noopWhat: "0.12 s (#41) / 0.10 s (#40) = 1.20× (floor without them: 0.03 s (#39), 4.00×) | yes",
			zeroWhat: "0 (#41) | yes",
			onceWhat: "first applications 2, kustomizations 0, helmreleases 0 (#38), no-op applications 2, kustomizations 0, helmreleases 0 (#41), " +
				"owners gone applications 2, kustomizations 0, helmreleases 0 (#43); the floor's paged list: applications 2 (#40) | yes",
			rssWhat: "39.0 MiB (#43) | yes",
		}},
		{name: "slow, writing, a list per namespace", n: 10000, noop: 0.2,
			noopLists: map[string]int{"list applications": 1000, "patch namespaces": 3}, want: map[string]string{
				noopWhat: "= 2.00× | **no**",
				zeroWhat: "3 (#41) | **no**",
				onceWhat: "no-op applications 1000, kustomizations 0, helmreleases 0 (#41) | **no**",
			}},
		{name: "a kind no namespace names listed", n: 1000, noop: 0.12,
			noopLists: map[string]int{"list applications": 2, "list kustomizations": 1}, want: map[string]string{
				onceWhat: "no-op applications 2, kustomizations 1, helmreleases 0 (#41) | **no**",
			}},
		{name: "no list of the Applications", n: 1000, noop: 0.12, noopLists: nil, want: map[string]string{
			onceWhat: "no-op applications 0, kustomizations 0, helmreleases 0 (#41) | **no**",
		}},
		{name: "at 1000, where the fixed cost weighs most", n: 1000, noop: 0.2, noopLists: apps, want: map[string]string{
			noopWhat: "= 2.00× | – (set at 10000)",
			zeroWhat: "0 (#41) | yes",
		}},
		{name: "at another size", n: 200, noop: 0.2, noopLists: apps, want: map[string]string{
			noopWhat: "= 2.00× | – (set at 10000)",
			zeroWhat: "0 (#41) | yes",
		}},
	} {
		rep := syntheticReport(map[string]int{"delete namespaces": 1000}, tree)
		rep.Owners = syntheticOwners(c.n, c.noop, c.noopLists)
		doc := render(rep)
		wantTargets(t, c.name, doc, c.n, c.want, "46")
	}

	rep := syntheticReport(map[string]int{"delete namespaces": 1000}, tree)
	rep.Sleep = syntheticSleep(1000, 2.8, 0.12, map[string]int{"patch namespaces": 2, "patch deployments": 2, "patch cronjobs": 1})
	rep.Owners = append(syntheticOwners(1000, 0.12, apps), syntheticOwners(10000, 0.12, apps)...)
	doc := render(rep)
	heading := "## A rule with OWNER_GONE over 1000 and 10000 namespaces that Argo CD Applications own (issue 46)"
	sleep, owners := strings.Index(doc, "## A SLEEP rule"), strings.Index(doc, heading)
	if owners < 0 || owners < sleep || sleep < 0 {
		t.Fatalf("no section %q after the SLEEP rule's:\n%s", heading, doc)
	}
	sec := section(doc, heading)
	for _, want := range []string{
		"for each size N measured (1000 and 10000)", "Application and of Flux's Kustomizations and HelmReleases",
		"`argocd.argoproj.io/tracking-id:\n<name>:/Namespace:<name>/<name>` that names the Application of its own name in `argocd`",
		"`--trusted-namespaces bench-owners --argocd-namespace argocd`", "`OWNER_GONE` (graceSeconds 0) → DELETE",
		"(page size 500) of each owner kind the namespaces name", "3\ntimes over, N/10 more Applications are deleted",
		"The no-op target is set at 10000, as the managers' is: at 1000\nnamespaces what a sweep pays besides its lists",
		"| #46 | 1000 | nsman sweep, first (records each namespace's owner) | 3.00 s | 1007 | 1001 |",
		"| #48 | 1000 | floor + paged LIST of each owner kind the rule's namespaces name (applications) | 0.10 s | 6 | 0 |",
		"| #50 | 1000 | diagnostic: nsman version (process start, no request) | 0.04 s | 0 | 0 |",
		"| #51 | 1000 | nsman sweep, 100 owners gone: OWNER_GONE (grace 0) → DELETE | 0.50 s | 207 | 102 |",
		"fired 100, waiting 900 |",
		"| #52 | 10000 | nsman sweep, first (records each namespace's owner) | 3.00 s | 10007 | 10001 |",
		"| #57 | 10000 | nsman sweep, 1000 owners gone: OWNER_GONE (grace 0) → DELETE | 0.50 s | 1107 | 1002 |",
		"fired 1000, waiting 9000 |",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("owners section lacks %q:\n%s", want, sec)
		}
	}
	an := section(doc, "## Analysis")
	for _, want := range []string{
		"**A rule with OWNER_GONE over 1000 namespaces.** The first sweep took 3.00 s (#46) and wrote 1001 requests (patch namespacemanagers/status 1, patch namespaces 1000).",
		"The no-op sweep took 0.12 s (#49):\n1.20× the read floor with the owner lists (0.10 s (#48)) and 4.00× the read floor (#47), which reads no owner; it made 6 requests,\n2 of them lists of applications, where the floor with the owner lists made 6, 2 of them (more: none).\n" +
			"`nsman version`, started as the sweeps are and making no request, took 0.04 s (#50): the no-op sweep less that start is 0.08 s,\n0.80× the read floor with the owner lists",
		"The sweep that found 100 owners gone took 0.50 s (#51) and fired 100; it wrote per namespace delete namespaces 1, and create events 1, patch namespacemanagers/status 1 besides;\n" +
			"its requests beyond the no-op sweep's: create events 1, delete namespaces 100, list persistentvolumeclaims 33, list pods 33, list services 33, patch namespacemanagers/status 1.",
		"The rule with OWNER_GONE over 1000 namespaces: 39.0 MiB (#51). The rule with OWNER_GONE over 10000 namespaces: 39.0 MiB (#57).",
		"**A rule with OWNER_GONE over 10000 namespaces.** The first sweep took 3.00 s (#52) and wrote 10001 requests",
		"The sweep that found 1000 owners gone took 0.50 s (#57) and fired 1000;",
	} {
		if !strings.Contains(an, want) {
			t.Errorf("analysis lacks %q:\n%s", want, an)
		}
	}
	if !strings.Contains(doc, "and 33 (sleep and wake), 46 (namespaces GitOps owns)") {
		t.Errorf("sources do not name issue 46")
	}
	// The no-op target is set at 10000: measured at 1000, marked not set.
	if row := targetRow(t, doc, 1000, noopWhat); !strings.Contains(row, "= 1.20×") || !strings.Contains(row, "| – (set at 10000) | 46 |") {
		t.Errorf("no-op target at 1000: %s", row)
	}
	if row := targetRow(t, doc, 10000, noopWhat); !strings.Contains(row, "0.12 s (#55) / 0.10 s (#54) = 1.20×") || !strings.Contains(row, "| yes | 46 |") {
		t.Errorf("no-op target at 10000: %s", row)
	}

	// The part alone renders with no gaps, numbered from #1.
	alone := rep
	alone.Owners = syntheticOwners(1000, 0.12, apps)
	alone.Rows, alone.Rules, alone.Idle, alone.Hostile, alone.Sleep, alone.Sizes, alone.Partial = nil, nil, nil, nil, nil, nil, []string{"NSMAN_BENCH_ONLY=owners"}
	doc = render(alone)
	for _, not := range []string{"\n\n\n", "NaN", "Inf", "%!", "## Managers", "## A SLEEP rule"} {
		if strings.Contains(doc, not) {
			t.Errorf("owners alone: document holds %q:\n%s", not, doc)
		}
	}
	if !strings.Contains(doc, "| #4 | 1000 | nsman sweep, no-op (nothing due) |") || !strings.Contains(doc, "**Peak RSS.** The rule with OWNER_GONE over 1000 namespaces: 39.0 MiB (#6).") {
		t.Errorf("owners alone:\n%s", doc)
	}
}

// wantTargets checks, in doc rendered for case name, the target row of size
// n of each key of want ("measured | met"), whose sources begin with
// source, and that doc holds no broken figure.
func wantTargets(t *testing.T, name, doc string, n int, want map[string]string, source string) {
	t.Helper()
	for what, w := range want {
		measured, met, _ := strings.Cut(w, " | ")
		row := targetRow(t, doc, n, what)
		if !strings.Contains(row, measured) || !strings.Contains(row, "| "+met+" | "+source) {
			t.Errorf("%s: target %s\nwant %q, met %s", name, row, measured, met)
		}
	}
	for _, not := range []string{"NaN", "Inf", "%!", "\n\n\n"} {
		if strings.Contains(doc, not) {
			t.Errorf("%s: document holds %q", name, not)
		}
	}
}

// syntheticTraffic are the rows of the traffic part over n namespaces, as
// measureTraffic makes them: the no-op sweep takes noop seconds against
// 0.1 for the process floor (0.05 for the same reads in the driver's
// process), writes what noopWrites says, and its report counts queries.
func syntheticTraffic(n int, noop float64, noopWrites, queries map[string]int) []measurement {
	s := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	with := func(ms ...map[string]int) map[string]int {
		out := map[string]int{}
		for _, m := range ms {
			for k, v := range m {
				out[k] += v
			}
		}
		return out
	}
	lists := map[string]int{"list namespacemanagers": 1, "list namespaces": 3}
	activity := map[string]int{"list pods": 1, "list replicasets": 1, "list controllerrevisions": 1, "list jobs": 1}
	waiting := map[report.State]int{report.StateWaiting: n}
	answered := map[string]int{"answered": 1, "unanswered": 0}
	rows := []measurement{
		{What: trafficFirstLabel, Wall: s(1.5), Audited: with(lists, activity, map[string]int{"patch namespaces": n, "patch namespacemanagers/status": 1}),
			MaxRSS: 36 << 10, States: waiting, TrafficQueries: answered},
		{What: readFloorLabel, Wall: s(0.03), Audited: lists},
		{What: trafficFloorLabel, Wall: s(0.05), Audited: with(lists, activity),
			Note: fmt.Sprintf("0 pods, 0 replicasets, 0 controllerrevisions, 0 jobs; one query: %d series, %d namespaces with requests", n, n)},
		{What: trafficProcessLabel, Wall: s(0.1), Audited: with(lists, activity), MaxRSS: 40 << 10,
			Note: fmt.Sprintf("1 managers, %d namespaces, 0 replicasets, 0 controllerrevisions, 0 jobs, 0 pods; one query: %d series, %d namespaces with requests", n+6, n, n)},
		{What: noopLabel, Wall: s(noop), Audited: with(lists, activity, noopWrites), MaxRSS: 38 << 10, States: waiting,
			TrafficQueries: queries, Runs: []time.Duration{s(noop), s(noop + 0.05), s(noop - 0.01)}},
		{What: trafficNoMatchLabel, Wall: s(0.07), Audited: with(lists, map[string]int{"list namespacemanagers": 1}), MaxRSS: 37 << 10,
			States: map[report.State]int{}, Note: "no entry; median of 0.07, 0.08, 0.06 s", Runs: []time.Duration{s(0.07), s(0.08), s(0.06)}},
	}
	for i := range rows {
		rows[i].N, rows[i].Load = n, "1.30"
	}
	return rows
}

// The traffic part (issue 47) has a section of its own, after the owners
// part's, and its targets are met or missed by the rows: the no-op sweep
// against the minimal client's reads, a process (the same reads in the
// driver's process a diagnostic beside it), and by its writes, each
// sweep's traffic queries as its report counts them; the peak RSS is
// nsman's, not the minimal client's.
func TestRenderTraffic(t *testing.T) {
	tree := treeState{Commit: strings.Repeat("a", 40), Describe: "aaaaaaa"}
	const (
		noopWhat  = "traffic: no-op sweep ≤ 1.3 × the minimal client's reads (a process)"
		zeroWhat  = "traffic: zero writes in a no-op sweep"
		queryWhat = "traffic: one traffic query per sweep, answered"
		rssWhat   = "traffic: peak RSS ≤ 64 MiB, over every nsman sweep"
	)
	answered := map[string]int{"answered": 1, "unanswered": 0}
	for _, c := range []struct {
		name       string
		n          int
		noop       float64
		noopWrites map[string]int
		queries    map[string]int
		want       map[string]string // target → "measured | met"
	}{
		{name: "met", n: 1000, noop: 0.12, queries: answered, want: map[string]string{
			noopWhat:  "0.12 s (#42) / 0.10 s (#41) = 1.20× (diagnostic, not a target: the same reads in the driver's process, 0.05 s (#40), 2.40×) | yes",
			zeroWhat:  "0 (#42) | yes",
			queryWhat: "first answered 1, unanswered 0 (#38), no-op answered 1, unanswered 0 (#42) | yes",
			rssWhat:   "38.0 MiB (#42) | yes",
		}},
		{name: "slow and writing", n: 1000, noop: 0.2, noopWrites: map[string]int{"patch namespaces": 3}, queries: answered, want: map[string]string{
			noopWhat: "= 2.00× (diagnostic, not a target: the same reads in the driver's process, 0.05 s (#40), 4.00×) | **no**",
			zeroWhat: "3 (#42) | **no**",
		}},
		// Within the bound against the process, far past it against the
		// driver's: met, the diagnostic says the other.
		{name: "met against the process only", n: 1000, noop: 0.13, queries: answered, want: map[string]string{
			noopWhat: "= 1.30× (diagnostic, not a target: the same reads in the driver's process, 0.05 s (#40), 2.60×) | yes",
		}},
		{name: "a query per namespace", n: 1000, noop: 0.12, queries: map[string]int{"answered": 1000, "unanswered": 0}, want: map[string]string{
			queryWhat: "no-op answered 1000, unanswered 0 (#42) | **no**",
		}},
		{name: "unanswered", n: 1000, noop: 0.12, queries: map[string]int{"answered": 0, "unanswered": 1}, want: map[string]string{
			queryWhat: "no-op answered 0, unanswered 1 (#42) | **no**",
		}},
		{name: "no query", n: 1000, noop: 0.12, queries: nil, want: map[string]string{
			queryWhat: "no-op none (#42) | **no**",
		}},
		{name: "at another size", n: 200, noop: 0.2, queries: answered, want: map[string]string{
			noopWhat: "= 2.00× (diagnostic, not a target: the same reads in the driver's process, 0.05 s (#40), 4.00×) | – (set at 1000)",
			zeroWhat: "0 (#42) | yes",
		}},
	} {
		rep := syntheticReport(map[string]int{"delete namespaces": 1000}, tree)
		rep.Traffic = syntheticTraffic(c.n, c.noop, c.noopWrites, c.queries)
		wantTargets(t, c.name, render(rep), c.n, c.want, "47")
	}

	rep := syntheticReport(map[string]int{"delete namespaces": 1000}, tree)
	apps := map[string]int{"list applications": 2}
	rep.Owners = syntheticOwners(1000, 0.12, apps)
	rep.Traffic = syntheticTraffic(1000, 0.12, nil, answered)
	doc := render(rep)
	heading := "## A rule with IDLE from traffic over 1000 namespaces (issue 47)"
	owners, traffic := strings.Index(doc, "## A rule with OWNER_GONE"), strings.Index(doc, heading)
	if traffic < 0 || owners < 0 || traffic < owners {
		t.Fatalf("no section %q after the owners part's:\n%s", heading, doc)
	}
	sec := section(doc, heading)
	for _, want := range []string{
		"at N = 1000 only", "`nsman.bench/traffic=on`", "`bench-traffic/idle`", "`--trusted-namespaces bench-traffic --prometheus-url`",
		"`IDLE` (idleSeconds 20, `traffic: {preset: ingress-nginx}`) → DELETE", "every 1s in a job whose target label `namespace=ingress-nginx`",
		"until the namespaces are 20 s old", "then, 3 times, interleaved: the read floor", "the preset's PromQL over 20 s, asked once",
		"`summary.trafficQueries`",
		"The process floor is a minimal client-go program (test/bench/testdata/trafficfloor), built by the generator",
		"started through the same launcher", "makes the same lists in the same order, asks the same query",
		"Those two floors run in the driver's process, its clients built and its connections warm",
		"The target is therefore set against the process floor, the least any process makes\nof these reads; the ratio to the same reads in the driver's process is reported beside it, a diagnostic, not a\ntarget.",
		"| #44 | 1000 | nsman sweep, first (reads activity and traffic) | 1.50 s | 1009 | 1001 |",
		"| #46 | 1000 | floor + paged LIST of pods, ReplicaSets, ControllerRevisions, Jobs + one Prometheus query | 0.05 s | 8 | 0 |",
		"| #47 | 1000 | floor as a process: a minimal client-go program (test/bench/testdata/trafficfloor) making the reads of the row above | 0.10 s | 8 | 0 | list controllerrevisions 1, list jobs 1, list namespacemanagers 1, list namespaces 3, list pods 1, list replicasets 1 | – | 40.0 MiB | 1 managers, 1006 namespaces,",
		"| #48 | 1000 | nsman sweep, no-op (nothing due) | 0.12 s | 8 | 0 |",
		"| #49 | 1000 | diagnostic: nsman sweep, no namespace matched (a rule selecting none, `-l`) | 0.07 s | 5 | 0 | list namespacemanagers 2, list namespaces 3 | – | 37.0 MiB | no entry; median of 0.07, 0.08, 0.06 s | 1.30 |",
		"a rule\n`bench-traffic/none` is created beside the other, labelled `nsman.bench/traffic-rule=none`, with the same policy over the namespaces\nlabelled `nsman.bench/traffic=none`, which none is",
		"(`-l nsman.bench/traffic-rule=none`, which lists the managers once more",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("traffic section lacks %q:\n%s", want, sec)
		}
	}
	an := section(doc, "## Analysis")
	for _, want := range []string{
		"**A rule with IDLE from traffic over 1000 namespaces.** The first sweep took 1.50 s (#44) and wrote 1001 requests (patch namespacemanagers/status 1, patch namespaces 1000); its traffic\nqueries: answered 1, unanswered 0.",
		"The no-op sweep took 0.12 s (#48): 1.20× the minimal client's reads, a process (0.10 s (#47)), the target's ratio.\nDiagnostics, not targets: 2.40× the same reads in the driver's process (0.05 s (#46)), and 4.00× the read floor (#45), which\nreads neither; the process floor less the in-process one, 0.05 s, is what starting a process and connecting cost the\nminimal client. The no-op sweep made 8 requests, 1 of them lists of controllerrevisions, where the floor with the\nactivity lists made 8 (more: none) and the process floor 8, and its traffic queries were answered 1, unanswered 0.",
		"The rule with IDLE from traffic over 1000 namespaces: 38.0 MiB (#48).",
		"The sweep of the rule that matched no namespace took 0.07 s (#49): 2.33× the read floor, with 5 requests (more than the\nfloor: list namespacemanagers 1), what a process of its own costs before it evaluates anything. The no-op sweep less it, 0.05 s, is what\nreading the activity and the traffic, evaluating 1000 namespaces and reporting them cost nsman; the floor with the\nactivity lists and the query less the read floor, 0.02 s, is what the lists and the query cost the floor: 2.50× it.",
	} {
		if !strings.Contains(an, want) {
			t.Errorf("analysis lacks %q:\n%s", want, an)
		}
	}
	if !strings.Contains(doc, "46 (namespaces GitOps owns), 47 (IDLE from traffic)") {
		t.Errorf("sources do not name issue 47")
	}

	// Without the diagnostic row (a run before it), no sentence of it; a
	// floor whose lists took no longer than the read floor, no ratio to it.
	without := rep
	without.Traffic = syntheticTraffic(1000, 0.12, nil, answered)[:5]
	if an := section(render(without), "## Analysis"); strings.Contains(an, "matched no namespace") || !strings.Contains(an, "its traffic queries were answered 1") {
		t.Errorf("no diagnostic row: analysis:\n%s", an)
	}
	even := rep
	even.Traffic = syntheticTraffic(1000, 0.12, nil, answered)
	even.Traffic[2].Wall = even.Traffic[1].Wall
	if an := section(render(even), "## Analysis"); !strings.Contains(an, "cost the floor.\n") || strings.Contains(an, "Inf") {
		t.Errorf("a floor with the lists as fast as without: analysis:\n%s", an)
	}

	// The part alone renders with no gaps, numbered from #1.
	alone := rep
	alone.Traffic = syntheticTraffic(1000, 0.12, nil, answered)
	alone.Rows, alone.Rules, alone.Idle, alone.Hostile, alone.Owners, alone.Sizes, alone.Partial = nil, nil, nil, nil, nil, nil, []string{"NSMAN_BENCH_ONLY=traffic"}
	doc = render(alone)
	for _, not := range []string{"\n\n\n", "NaN", "Inf", "%!", "## Managers", "## A rule with OWNER_GONE"} {
		if strings.Contains(doc, not) {
			t.Errorf("traffic alone: document holds %q:\n%s", not, doc)
		}
	}
	if !strings.Contains(doc, "| #5 | 1000 | nsman sweep, no-op (nothing due) |") || !strings.Contains(doc, "**Peak RSS.** The rule with IDLE from traffic over 1000 namespaces: 38.0 MiB (#5).") {
		t.Errorf("traffic alone:\n%s", doc)
	}
}

// syntheticParams are the rows of the part of the SLEEP with every
// parameter over n namespaces, as measureParams makes them: the sleep
// sweep takes sleep seconds against 2 for its floor, the wake 2.5 s
// against 2; each writes perNamespace per namespace, and the sweep while
// asleep asleepWrites.
func syntheticParams(n int, sleep float64, perNamespace, asleepWrites map[string]int) []measurement {
	s := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	floorWrites := map[string]int{"patch namespaces": 2, "patch deployments": 1, "patch services": 1, "patch helmreleases": 1}
	lists := map[string]int{"list deployments": 1, "list statefulsets": 1, "list cronjobs": 1, "list services": 1, "list helmreleases": 1}
	managers := map[string]int{"list namespacemanagers": 1, "list namespaces": 1}
	once := map[string]int{"create events": 1, "patch namespacemanagers/status": 1}
	fired, asleep := map[report.State]int{report.StateFired: n}, map[report.State]int{report.StateAsleep: n}
	rows := []measurement{
		{What: paramsSleepLabel(n), Wall: s(sleep), Audited: scaledSum(n, scaledSum(1, lists, perNamespace), managers, once), MaxRSS: 40 << 10, States: fired,
			Runs: []time.Duration{s(sleep), s(sleep + 0.4), s(sleep - 0.2)}},
		{What: paramsSleepFloorLabel(n), Wall: s(2), Audited: scaledSum(n, floorWrites)},
		{What: firstAsleepLabel, Wall: s(0.5), Audited: scaledSum(n, map[string]int{"list helmreleases": 1}, managers, map[string]int{"patch namespacemanagers/status": 1}), MaxRSS: 38 << 10, States: asleep},
		{What: asleepLabel, Wall: s(0.4), Audited: scaledSum(n, map[string]int{"list helmreleases": 1}, managers, asleepWrites), MaxRSS: 37 << 10, States: asleep},
		{What: paramsWakeLabel(n), Wall: s(2.5), Audited: scaledSum(n, scaledSum(1, lists, perNamespace), managers, once), MaxRSS: 41 << 10, States: fired},
		{What: paramsWakeFloorLabel(n), Wall: s(2), Audited: scaledSum(n, floorWrites)},
	}
	for i := range rows {
		rows[i].N, rows[i].Load = n, "1.40"
	}
	return rows
}

// The part of the SLEEP with every parameter (issue 47) has a section of
// its own, after the traffic part's, and its targets are met or missed by
// the rows: the sleep and the wake against their write floors, the writes
// per namespace against the floors', the sweep while asleep by its
// writes, peak RSS.
func TestRenderParams(t *testing.T) {
	tree := treeState{Commit: strings.Repeat("a", 40), Describe: "aaaaaaa"}
	asFloor := map[string]int{"patch namespaces": 2, "patch deployments": 1, "patch services": 1, "patch helmreleases": 1}
	const (
		prefix     = "SLEEP with replicas, loadBalancers, patches: "
		sleepWhat  = prefix + "sweep that puts 1000 namespaces to sleep ≤ 1.5 × its write floor"
		wakeWhat   = prefix + "sweep that wakes 1000 namespaces ≤ 1.5 × its write floor"
		writesWhat = prefix + "writes per namespace of the sleep and the wake = their write floors'"
		zeroWhat   = prefix + "zero writes in a sweep while asleep"
		rssWhat    = prefix + "peak RSS ≤ 64 MiB, over every nsman sweep"
	)
	alone := func(rows []measurement) benchRun {
		rep := syntheticReport(map[string]int{"delete namespaces": 1000}, tree)
		rep.Rows, rep.Rules, rep.Idle, rep.Hostile, rep.Sizes, rep.Partial = nil, nil, nil, nil, nil, []string{"NSMAN_BENCH_ONLY=params"}
		rep.Params = rows
		return rep
	}
	for _, c := range []struct {
		name         string
		n            int
		sleep        float64
		perNamespace map[string]int
		asleepWrites map[string]int
		want         map[string]string // target → "measured | met"
	}{
		{name: "met", n: 1000, sleep: 2.8, perNamespace: asFloor, want: map[string]string{
			sleepWhat:  "2.80 s (#1) / 2.00 s (#2) = 1.40× | yes",
			wakeWhat:   "2.50 s (#5) / 2.00 s (#6) = 1.25× | yes",
			writesWhat: "sleep 5 (#1) vs 5 (#2), wake 5 (#5) vs 5 (#6) | yes",
			zeroWhat:   "0 (#4) | yes",
			rssWhat:    "41.0 MiB (#5) | yes",
		}},
		{name: "slow sleep, writing while asleep", n: 1000, sleep: 3.2, perNamespace: asFloor, asleepWrites: map[string]int{"patch helmreleases": 1}, want: map[string]string{
			sleepWhat: "= 1.60× | **no**",
			wakeWhat:  "= 1.25× | yes",
			zeroWhat:  "1 (#4) | **no**",
		}},
		{name: "a write the floor does not make", n: 1000, sleep: 2.8,
			perNamespace: map[string]int{"patch namespaces": 2, "patch deployments": 2, "patch services": 1, "patch helmreleases": 1}, want: map[string]string{
				writesWhat: "sleep 6 (#1) vs 5 (#2), wake 6 (#5) vs 5 (#6) | **no**",
			}},
		{name: "at another size", n: 100, sleep: 3.2, perNamespace: asFloor, want: map[string]string{
			prefix + "sweep that puts 100 namespaces to sleep ≤ 1.5 × its write floor": "= 1.60× | – (set at 1000)",
			prefix + "zero writes in a sweep while asleep":                             "0 (#4) | yes",
		}},
	} {
		wantTargets(t, c.name, render(alone(syntheticParams(c.n, c.sleep, c.perNamespace, c.asleepWrites))), c.n, c.want, "47")
	}

	rep := syntheticReport(map[string]int{"delete namespaces": 1000}, tree)
	rep.Traffic = syntheticTraffic(1000, 0.12, nil, map[string]int{"answered": 1})
	rep.Params = syntheticParams(1000, 2.8, asFloor, nil)
	doc := render(rep)
	heading := "## A SLEEP with replicas, loadBalancers and patches over 1000 namespaces (issue 47)"
	traffic, params := strings.Index(doc, "## A rule with IDLE from traffic"), strings.Index(doc, heading)
	if params < 0 || traffic < 0 || params < traffic {
		t.Fatalf("no section %q after the traffic part's:\n%s", heading, doc)
	}
	sec := section(doc, heading)
	for _, want := range []string{
		"at the size of the SLEEP part (N = 1000)", "deploy/components/flux-suspend applied",
		"the Deployment `web` of 3 replicas,\nthe Service `edge` of type LoadBalancer (source ranges 10.0.0.0/8, 192.168.0.0/16) and the HelmRelease `release` labelled `app=web`\n",
		"`{replicas: 1, loadBalancers: true,\npatches: [{kind: HelmRelease.helm.toolkit.fluxcd.io, labels: {app: web}, patch: {spec: {suspend: true}}}]}`",
		"`--trusted-namespaces bench-params`", "`nsman.k8s.consol.de/replicas-before-scale-down` and `nsman.k8s.consol.de/replicas-asleep`",
		"`nsman.k8s.consol.de/load-balancer-before-sleep`", "`nsman.k8s.consol.de/patched-before-sleep` (the patch and its inverse): 5 writes",
		"| 1000 | nsman sweep, SLEEP (replicas, loadBalancers, patches) puts 1000 namespaces to sleep | 2.80 s | 10004 | 5002 |",
		"| 1000 | sleep write floor: 1000 × (claim, 3 patches with their records, record), 16 workers | 2.00 s | 5000 | 5000 |",
		"| 1000 | nsman sweep, while asleep (nothing to do) | 0.40 s | 1002 | 0 |",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("params section lacks %q:\n%s", want, sec)
		}
	}
	an := section(doc, "## Analysis")
	for _, want := range []string{
		"**A SLEEP with replicas, loadBalancers and patches over 1000 namespaces.** The sweep that put them to sleep took 2.80 s (#",
		"1.40× its write floor", "per namespace patch deployments 1, patch helmreleases 1, patch namespaces 2, patch services 1, and create events 1, patch namespacemanagers/status 1 besides",
		"list helmreleases 1000, list namespacemanagers 1", "The sweep that woke them took 2.50 s (#",
		"the next took 0.40 s (#", "and made 1002 requests, 0 of them writes (list helmreleases 1000, list namespacemanagers 1, list namespaces 1):\n" +
			"1000 of them lists of helmreleases, the patch's kind, which a sweep lists once for each patch, cluster-wide, past 20 namespaces asleep",
		"The SLEEP with replicas, loadBalancers and patches over 1000 namespaces: 41.0 MiB (#",
	} {
		if !strings.Contains(an, want) {
			t.Errorf("analysis lacks %q:\n%s", want, an)
		}
	}
	if !strings.Contains(doc, "47 (IDLE from traffic) and its sleep with all three parameters") {
		t.Errorf("sources do not name the sleep's parameters")
	}

	// The part alone renders with no gaps, numbered from #1.
	doc = render(alone(syntheticParams(1000, 2.8, asFloor, nil)))
	for _, not := range []string{"\n\n\n", "NaN", "Inf", "%!", "## Managers", "## A SLEEP rule over"} {
		if strings.Contains(doc, not) {
			t.Errorf("params alone: document holds %q:\n%s", not, doc)
		}
	}
	if !strings.Contains(doc, "| #4 | 1000 | nsman sweep, while asleep (nothing to do) |") ||
		!strings.Contains(doc, "**Peak RSS.** The SLEEP with replicas, loadBalancers and patches over 1000 namespaces: 41.0 MiB (#5).") {
		t.Errorf("params alone:\n%s", doc)
	}
}

// syntheticWarn are the rows of the warn part over n managers, as
// measureWarn makes them: the no-op sweep takes 0.5 s, the deliveries
// floor 1.5 s, the warning sweep warn seconds writing perManager per
// manager, the sweep again againWrites.
func syntheticWarn(n int, warn float64, perManager, againWrites map[string]int) []measurement {
	s := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	lists := map[string]int{"list namespacemanagers": 1, "list namespaces": 1}
	floorWrites := map[string]int{"patch namespacemanagers/status": 1, "create events": 1}
	waiting := map[report.State]int{report.StateWaiting: n}
	told := fmt.Sprintf("%d dueSoon notifications received, for %d managers", n, n)
	none := "0 dueSoon notifications received, for 0 managers"
	rows := []measurement{
		{What: firstSweepLabel + " (records status)", Wall: s(1), Audited: scaledSum(n, map[string]int{"patch namespacemanagers/status": 1}, lists), MaxRSS: 36 << 10, States: waiting, Note: none},
		{What: noopLabel, Wall: s(0.5), Audited: lists, MaxRSS: 35 << 10, States: waiting, Note: none + "; median of 0.50, 0.55, 0.49 s",
			Runs: []time.Duration{s(0.5), s(0.55), s(0.49)}},
		{What: warnSweepLabel(n), Wall: s(warn), Audited: scaledSum(n, perManager, lists), MaxRSS: 39 << 10, States: waiting, Note: told},
		{What: warnAgainLabel, Wall: s(0.45), Audited: scaledSum(1, againWrites, lists), MaxRSS: 35 << 10, States: waiting, Note: none},
		{What: warnFloorLabel(n), Wall: s(1.5), Audited: scaledSum(n, floorWrites), Note: told},
	}
	for i := range rows {
		rows[i].N, rows[i].Load = n, "1.20"
	}
	return rows
}

// The warn part (issue 48) has a section of its own, after the params
// part's, and its target is met or missed by the rows: the warning sweep
// against the no-op sweep plus the deliveries floor.
func TestRenderWarn(t *testing.T) {
	tree := treeState{Commit: strings.Repeat("a", 40), Describe: "aaaaaaa"}
	asFloor := map[string]int{"patch namespacemanagers/status": 1, "create events": 1}
	alone := func(rows []measurement) benchRun {
		rep := syntheticReport(map[string]int{"delete namespaces": 1000}, tree)
		rep.Rows, rep.Rules, rep.Idle, rep.Hostile, rep.Sizes, rep.Partial = nil, nil, nil, nil, nil, []string{"NSMAN_BENCH_ONLY=warn"}
		rep.Warn = rows
		return rep
	}
	for _, c := range []struct {
		name string
		n    int
		warn float64
		want map[string]string // target → "measured | met"
	}{
		{name: "met", n: 1000, warn: 2.8, want: map[string]string{
			"warnings: sweep that warns 1000 managers ≤ 1.5 × (no-op sweep + deliveries floor)": "2.80 s (#3) / (0.50 s (#2) + 1.50 s (#5) = 2.00 s) = 1.40× | yes",
		}},
		{name: "missed", n: 1000, warn: 3.2, want: map[string]string{
			"warnings: sweep that warns 1000 managers ≤ 1.5 × (no-op sweep + deliveries floor)": "= 1.60× | **no**",
		}},
		{name: "at another size", n: 100, warn: 3.2, want: map[string]string{
			"warnings: sweep that warns 100 managers ≤ 1.5 × (no-op sweep + deliveries floor)": "= 1.60× | – (set at 1000)",
		}},
	} {
		wantTargets(t, c.name, render(alone(syntheticWarn(c.n, c.warn, asFloor, nil))), c.n, c.want, "48")
	}

	rep := syntheticReport(map[string]int{"delete namespaces": 1000}, tree)
	rep.Params = syntheticParams(1000, 2.8, map[string]int{"patch namespaces": 2, "patch deployments": 1, "patch services": 1, "patch helmreleases": 1}, nil)
	rep.Warn = syntheticWarn(1000, 2.8, map[string]int{"patch namespacemanagers/status": 1, "create events": 1}, nil)
	doc := render(rep)
	heading := "## Warnings before a DELETE over 1000 managers (issue 48)"
	params, warn := strings.Index(doc, "## A SLEEP with replicas, loadBalancers and patches"), strings.Index(doc, heading)
	if warn < 0 || params < 0 || warn < params {
		t.Fatalf("no section %q after the params part's:\n%s", heading, doc)
	}
	sec := section(doc, heading)
	for _, want := range []string{
		"at N = 1000", "`TTL` → DELETE, `warnBefore: [\"24h\"]`", "ttlSeconds 259200 (due in 72 hours, not within the threshold)",
		"ttlSeconds 7200 (due in 2 hours, within it)", "for each of 3 rounds", "`-l nsman.bench/set=SET`", "`--notify-format json`",
		"sets `status.warned`; the `DueSoon` Event (events.k8s.io/v1)", "with 16 workers",
		"| 1000 | nsman sweep, warns 1000 managers due within warnBefore 24h (--notify-url-file, json) | 2.80 s | 2002 | 2000 |",
		"waiting 1000; 1000 dueSoon notifications received, for 1000 managers |",
		"| 1000 | deliveries floor: 1000 × (status.warned patch, Event, POST), 16 workers | 1.50 s | 2000 | 2000 |",
		"| 1000 | nsman sweep, the same managers again (warned already) | 0.45 s | 2 | 0 |",
		"The warning sweep took 2.80 s (#", "1.40× the no-op sweep (", "against the 1.5× bound;\nless the no-op sweep, 2.30 s, 1.53× the floor",
		"It wrote 2 requests per manager (create events 1, patch namespacemanagers/status 1),\nwhere the floor writes 2 (create events 1, patch namespacemanagers/status 1); the sweep again took 0.45 s (#",
		"and wrote 0.",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("warn section lacks %q:\n%s", want, sec)
		}
	}
	if !strings.Contains(section(doc, "## Analysis"), "The warnings over 1000 managers: 39.0 MiB (#") {
		t.Errorf("analysis lacks the warn part's peak RSS:\n%s", section(doc, "## Analysis"))
	}
	if !strings.Contains(doc, "48 (warnings before an action)") {
		t.Errorf("sources do not name issue 48")
	}

	// A sweep again that writes shows in the note line.
	again := render(alone(syntheticWarn(1000, 2.8, asFloor, map[string]int{"patch namespacemanagers/status": 3})))
	if !strings.Contains(again, "the sweep again took 0.45 s (#4) and wrote 3.") {
		t.Errorf("warn alone, a sweep again that writes:\n%s", section(again, heading))
	}

	// The part alone renders with no gaps, numbered from #1.
	doc = render(alone(syntheticWarn(1000, 2.8, asFloor, nil)))
	for _, not := range []string{"\n\n\n", "NaN", "Inf", "%!", "## Managers", "## A SLEEP rule over"} {
		if strings.Contains(doc, not) {
			t.Errorf("warn alone: document holds %q:\n%s", not, doc)
		}
	}
	if !strings.Contains(doc, "| #2 | 1000 | nsman sweep, no-op (nothing due) |") ||
		!strings.Contains(doc, "**Peak RSS.** The warnings over 1000 managers: 39.0 MiB (#3).") {
		t.Errorf("warn alone:\n%s", doc)
	}
}

// scaledSum sums the counts of ms, the first's multiplied by k.
func scaledSum(k int, ms ...map[string]int) map[string]int {
	out := map[string]int{}
	for i, m := range ms {
		for key, v := range m {
			if i == 0 {
				v *= k
			}
			out[key] += v
		}
	}
	return out
}
