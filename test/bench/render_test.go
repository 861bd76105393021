package bench

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/internal/reclaim"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/report"

	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/test/nsmantest"
)

// benchRun is everything a run measured and what it measured it on: render
// writes BENCHMARKS.md from it, and from nothing else.
type benchRun struct {
	// Rows are the managers' part, for each of Sizes; Rules the rule's;
	// Idle the part with half the managers IDLE (issue 25), for each size
	// it measured; Hostile the hostile tenant's (issue 31); Sleep the
	// SLEEP rule's (issue 33); Owners the rule with OWNER_GONE over
	// namespaces Argo CD Applications own (issue 46); Traffic the rule
	// with IDLE from traffic (issue 47); Params the SLEEP with replicas,
	// loadBalancers and patches (issue 47); Warn the warnings before a
	// DELETE (issue 48).
	Rows, Rules, Idle, Hostile, Sleep, Owners, Traffic, Params, Warn []measurement
	Sizes                                                            []int
	// Due is how many managers (or a rule's namespaces) come due per
	// DELETE sweep and per write floor.
	Due         int
	KubeVersion string
	Began       time.Time
	// Tree is the checkout measured, read before nsman was built;
	// ChangedTo, when not nil, what it was at the end of the run.
	Tree      treeState
	ChangedTo *treeState
	// AllowModified: the run was told to write BENCHMARKS.md from a
	// modified tree.
	AllowModified bool
	// Nsman is the measured binary's `nsman version`; Flags the defaults
	// of its sweep's flags, from its --help.
	Nsman string
	Flags map[string]string
	// GoBench is the output of the Go benchmarks of GoPkgs, run by the
	// generator on the same tree.
	GoBench string
	GoPkgs  []string
	// Partial lists what made the run partial (not BENCHMARKS.md).
	Partial []string
}

// The labels of the rows render finds by prefix.
const (
	firstSweepLabel = "nsman sweep, first"
	noopLabel       = "nsman sweep, no-op (nothing due)"
	readFloorLabel  = "floor: paged LIST of managers + namespaces"
	gogcLabel       = "diagnostic: GOGC=100 (Go's default), nsman sweep, no-op"
	unthrottledTag  = "diagnostic: nsman sweep, "
	floorPlusPrefix = "floor + "
)

// The labels of the DELETE sweep and the write floors.
func deleteSweepLabel(due int) string { return fmt.Sprintf("nsman sweep, %d due for DELETE", due) }

func writeFloorLabel(due int) string {
	return fmt.Sprintf("write floor: %d × (claim, delete, deactivate), %d workers", due, floorConcurrency)
}

func writeFloor2Label(due int) string {
	return fmt.Sprintf("write floor: %d × (claim, delete), %d workers", due, floorConcurrency)
}

func deleteFloorLabel(due int) string {
	return fmt.Sprintf("delete floor: %d × DELETE (UID + resourceVersion preconditions), %d workers", due, floorConcurrency)
}

// noReclaimLabel is the label of the DELETE sweep with --reclaim=false: it
// does not start as deleteSweepLabel does, which rows are found by.
func noReclaimLabel(due int) string {
	return fmt.Sprintf("nsman sweep --reclaim=false, %d due for DELETE", due)
}

func unthrottledLabel(due int) string {
	return fmt.Sprintf("%s%d due for DELETE, --qps 100000 --burst 100000", unthrottledTag, due)
}

func shardsLabel(due, shards int) string {
	return fmt.Sprintf("nsman, %d due for DELETE, %d shards side by side", due, shards)
}

// The bounds of the targets.
const (
	// noopBound: the managers' no-op sweep against the read floor at
	// 10,000 (issue 6 set 1.3; "One executor" holds it to no worse than
	// the 1.0 it met).
	noopBound = 1.0
	// ruleNoopBound: the rule's no-op sweep against its read floor
	// (issue 13).
	ruleNoopBound = 1.3
	// idleNoopBound: the no-op sweep with half the managers IDLE against
	// the read floor that lists what IDLE must read (issue 25).
	idleNoopBound = 1.3
	// rssBoundMiB: peak RSS of every sweep (issue 6).
	rssBoundMiB = 64
	// deleteBound and deleteWallBound: DELETE sweep against the write
	// floor (claim, delete, deactivate) (issue 6), and the rule's against
	// its write floor (issue 13).
	deleteBound     = 2.5
	deleteWallBound = 10 * time.Second
	// claimDeleteBound: against the write floor (claim, delete) (issue 12).
	claimDeleteBound = 1.3
	// deleteFloorBound: against the delete floor ("One executor", point 10).
	deleteFloorBound = 1.2
	// reclaimBound: the DELETE sweep, which reads before each DELETE what
	// it frees, against the same sweep with --reclaim=false (the reclaim
	// issue: "1,000 DELETEs with reclaim against without, target ≤ 1.3×").
	reclaimBound = 1.3
	// noopTargetSize is the size the no-op targets are set at: below it
	// the fixed costs (process start, discovery) weigh more than the lists.
	noopTargetSize = 10000
	// deleteTargetSize is the size the DELETE targets against the (claim,
	// delete) and delete floors are set at ("1,000 self-deleting DELETEs
	// … at 1,000"): the floors are handed their namespaces, while nsman
	// lists every manager to find them, which at 10,000 managers alone
	// outlasts 1,000 bare DELETEs. The reclaim target is set at the same
	// size, where the 1,000-DELETE sweep is measured.
	deleteTargetSize = 1000
)

// target is one row of the targets table.
type target struct {
	N        int
	What     string
	Measured string
	Met      bool
	// NotSet: measured at a size the target is not set at.
	NotSet string
	Source string
}

func sec(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

func mib(kib int64) string { return fmt.Sprintf("%.1f MiB", float64(kib)/1024) }

func ratio(a, b time.Duration) float64 { return a.Seconds() / b.Seconds() }

// ref cites m's row.
func (m measurement) ref() string { return fmt.Sprintf("#%d", m.ID) }

// at is m's wall time and its row.
func (m measurement) at() string { return sec(m.Wall) + " (" + m.ref() + ")" }

// rowSet finds the rows of one part of the document by label.
type rowSet []measurement

// get is the first row of size n whose label starts with prefix.
func (rs rowSet) get(n int, prefix string) (measurement, bool) {
	for _, m := range rs {
		if m.N == n && strings.HasPrefix(m.What, prefix) {
			return m, true
		}
	}
	return measurement{}, false
}

// must is get for the rows every complete part has.
func (rs rowSet) must(n int, prefix string) measurement {
	m, ok := rs.get(n, prefix)
	if !ok {
		panic(fmt.Sprintf("no row %q at %d", prefix, n))
	}
	return m
}

// numbered numbers the rows of every part, in the order given, for the
// document to cite them.
func numbered(parts ...[]measurement) []rowSet {
	out := make([]rowSet, len(parts))
	id := 0
	for p, part := range parts {
		out[p] = slices.Clone(part)
		for i := range out[p] {
			id++
			out[p][i].ID = id
		}
	}
	return out
}

// sizesOf lists the sizes of rows, in the order measured.
func sizesOf(rows []measurement) []int {
	var sizes []int
	for _, m := range rows {
		if !slices.Contains(sizes, m.N) {
			sizes = append(sizes, m.N)
		}
	}
	return sizes
}

// render writes BENCHMARKS.md: every figure in it comes from rep.
func render(rep benchRun) string {
	parts := numbered(rep.Rows, rep.Rules, rep.Idle, rep.Hostile, rep.Sleep, rep.Owners, rep.Traffic, rep.Params, rep.Warn)
	rows, rules, idle, hostile, sleep, owners, traffic, params, warn := parts[0], parts[1], parts[2], parts[3], parts[4], parts[5], parts[6], parts[7], parts[8]
	idleSizes := sizesOf(idle)
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	due := rep.Due
	header(&b, rep)

	targets := managerTargets(rows, rep.Sizes, due)
	var ruleN int
	if len(rules) > 0 {
		ruleN = rules[0].N
		targets = append(targets, ruleTargets(rules, ruleN, due)...)
	}
	targets = append(targets, idleTargets(idle, idleSizes)...)
	targets = append(targets, hostileTargets(hostile)...)
	targets = append(targets, fatTargets(hostile)...)
	targets = append(targets, sleepTargets(sleep)...)
	targets = append(targets, ownersTargets(owners)...)
	targets = append(targets, trafficTargets(traffic)...)
	targets = append(targets, paramsTargets(params)...)
	targets = append(targets, warnTargets(warn)...)

	p("\n## How it is measured\n\n")
	method(&b, rep)

	if len(rows) > 0 {
		p("\n## Managers\n\n")
		table(&b, rows, "managers")
	}
	if len(rules) > 0 {
		p("\n## One rule over %d namespaces (issue 13)\n\n", ruleN)
		ruleMethod(&b, ruleN, due)
		table(&b, rules, "pairs")
	}
	if len(idle) > 0 {
		p("\n## %s managers, half of them IDLE (issue 25)\n\n", andList(idleSizes))
		idleMethod(&b, idleSizes)
		table(&b, idle, "managers")
	}
	if len(hostile) > 0 {
		p("\n## A hostile tenant (issue 31)\n\n")
		if _, ok := hostile.get(hostileManagers, hostileSweepLabel()); ok {
			hostileMethod(&b)
		}
		if _, ok := hostile.get(2*fatDeployments, fatSweepLabel()); ok {
			fatMethod(&b)
		}
		table(&b, hostile, "subjects")
	}
	if len(sleep) > 0 {
		p("\n## A SLEEP rule over %d namespaces of %d workloads (issue 33)\n\n", sleep[0].N, sleepWorkloads)
		sleepMethod(&b, sleep)
		table(&b, sleep, "pairs")
	}
	if len(owners) > 0 {
		p("\n## A rule with OWNER_GONE over %s namespaces that Argo CD Applications own (issue 46)\n\n", andList(sizesOf(owners)))
		ownersMethod(&b, owners)
		table(&b, owners, "pairs")
	}
	if len(traffic) > 0 {
		p("\n## A rule with IDLE from traffic over %d namespaces (issue 47)\n\n", traffic[0].N)
		trafficMethod(&b, traffic[0].N)
		table(&b, traffic, "pairs")
	}
	if len(params) > 0 {
		p("\n## A SLEEP with replicas, loadBalancers and patches over %d namespaces (issue 47)\n\n", params[0].N)
		paramsMethod(&b, params)
		table(&b, params, "pairs")
	}
	if len(warn) > 0 {
		p("\n## Warnings before a DELETE over %d managers (issue 48)\n\n", warn[0].N)
		warnMethod(&b, warn)
		table(&b, warn, "managers")
		warnNote(&b, warn)
	}
	if len(rows)+len(rules) > 0 {
		writesTable(&b, rows, rules, rep.Sizes, ruleN, due)
	}

	p("\n## Targets\n\n")
	p("| N | target | measured | met | source |\n|---:|---|---|---|---|\n")
	for _, tg := range targets {
		met := "yes"
		switch {
		case tg.NotSet != "":
			met = "– (" + tg.NotSet + ")"
		case !tg.Met:
			met = "**no**"
		}
		p("| %d | %s | %s | %s | %s |\n", tg.N, tg.What, tg.Measured, met, tg.Source)
	}
	p("\nSources: issues 6, 12, 13, 24 (what a sweep's DELETEs free, `--reclaim`), 25 (what IDLE reads), 31 (a hostile tenant)\n")
	p("and 33 (sleep and wake), 46 (namespaces GitOps owns), 47 (IDLE from traffic) and its sleep with all three parameters,\n")
	p("48 (warnings before an action), point 10 and the “must hold” of the issue “One executor, and tests that cannot lie” (OE).\n")
	p("The bounds are constants of test/bench/render_test.go (and of each part's file); “met” is computed from the rows cited.\n")

	growth(&b, rows, rep.Sizes, due)
	sharding(&b, rows, rep.Sizes, due)
	analysis(&b, rep, rows, rules, idle, hostile, sleep, owners, traffic, params, warn, targets)

	p("\n## Go benchmarks\n\n")
	if rep.GoBench == "" {
		p("Not run in this run (`make bench` runs them: NSMAN_BENCH_GO_PKGS names the packages).\n")
	} else {
		p("`go test -run '^$' -bench . -benchmem` of %s, run by the generator on the same tree before the control-plane part:\n\n", strings.Join(rep.GoPkgs, " "))
		p("```\n%s", rep.GoBench)
		if !strings.HasSuffix(rep.GoBench, "\n") {
			p("\n")
		}
		p("```\n")
	}
	return b.String()
}

// header writes the title, the commit measured and the machine.
func header(b *strings.Builder, rep benchRun) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("# nsman benchmarks\n\n")
	by := "`" + Command + "`"
	if len(rep.Partial) > 0 {
		by = fmt.Sprintf("a partial run of test/bench (%s)", strings.Join(rep.Partial, ", "))
	}
	p("Generated by %s on %s, from commit `%s` (`git describe --always --dirty`: `%s`).\n", by,
		rep.Began.UTC().Format("2006-01-02 15:04 MST"), rep.Tree.Commit, rep.Tree.Describe)
	if rep.Tree.modified() {
		p("**The tree was modified**: it had uncommitted changes, so these figures are not those of commit `%s`:\n\n", rep.Tree.Commit)
		for _, c := range rep.Tree.Changes {
			p("    %s\n", c)
		}
		p("\n")
		if rep.AllowModified {
			p("(Written with %s=1.)\n", allowModifiedEnv)
		}
	} else {
		p("The tree had no uncommitted changes and no untracked files (`git status --porcelain`).\n")
	}
	if rep.ChangedTo != nil {
		p("**The tree changed during the run**: at its end it was %s.\n", *rep.ChangedTo)
	}
	p("The nsman measured was built from that tree by the generator; `nsman version` says `%s`.\n", rep.Nsman)
	p("Every figure below is computed by the generator (test/bench) from what it measured.\n\n")
	p("Machine: %d CPUs (`nproc`, %s), %s memory, %s/%s; %s; kube-apiserver %s (API tier of test/cluster: etcd + kube-apiserver, audit log on, blocking).\n",
		runtime.NumCPU(), cpuModel(), memTotal(), runtime.GOOS, runtime.GOARCH, runtime.Version(), rep.KubeVersion)
}

// method describes the managers' part and what is common to both.
func method(b *strings.Builder, rep benchRun) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	due := rep.Due
	flags := func(names ...string) string {
		var fs []string
		for _, n := range names {
			fs = append(fs, fmt.Sprintf("--%s %s", n, cmpOr(rep.Flags[n], "?")))
		}
		return "`" + strings.Join(fs, " ") + "`"
	}
	p("Each size runs in a fresh control plane. Seeded: N managers, each in its own namespace and targeting it; half TTL 24 h (not due),\n")
	p("half PODS_SUCCEED (initialDelaySeconds 0) with one Running pod, so that every sweep checks their pods and keeps waiting.\n")
	p("Then, for each of %d rounds, %d sets of %d more managers due for DELETE (TTL 0), each in the namespace it deletes: one set for\n", deleteRounds, len(roundSets), due)
	p("nsman's DELETE sweep, one for the same sweep with `--reclaim=false` and one for each floor below that writes, so that no two\n")
	p("runs touch the same namespaces. A round runs nsman's sweep, then the sweep with `--reclaim=false`, then each of those floors,\n")
	p("in turn; the rows are the median runs, and their notes list every run. nsman's DELETE sweep reads, before each DELETE, what it\n")
	p("frees (internal/reclaim/reclaim.go): three lists per namespace (pods not finished, PersistentVolumeClaims, LoadBalancer Services) for the\n")
	p("first %d DELETEs, then the same three lists once, cluster-wide and paged; with `--reclaim=false` it reads none of them. One more set\n", reclaim.ReclaimIndexAfter)
	p("is seeded for the unthrottled diagnostic and one for each sharded run. Each set is seeded just before its run, untimed, and\n")
	p("the namespaces a run deleted are finalized after it, untimed, as the namespace controller (which the API tier lacks) would:\n")
	p("each run finds the N managers, their namespaces and its own set, not the namespaces of other runs.\n\n")
	p("nsman is the built binary, run as a child process as its ServiceAccount (deploy/base/rbac.yaml) with its default flags\n")
	p("(%s, as its `sweep --help` says) and its own GC target (unless the environment sets GOGC; a diagnostic\n", flags("concurrency", "qps", "burst"))
	p("row shows Go's default of 100). The floors are minimal client-go code in the driver, as the same ServiceAccount, unthrottled\n")
	p("(QPS -1), with %d workers (nsman's default `--concurrency`) and page size %d as nsman:\n\n", floorConcurrency, pageSize)
	p("- the read floor: one paged LIST of the managers and one of the namespaces (metadata only), after nsman's first sweep, so that\n")
	p("  it lists the same objects as the no-op sweep (managers with their status); the next row adds a pods check (a list, limit 1)\n")
	p("  per PODS_SUCCEED manager. The read floors and the no-op sweep are measured %d times, interleaved.\n", readRounds)
	p("- the write floor (claim, delete, deactivate), per manager: the claim (a merge patch of the status subresource, conditional on\n")
	p("  the listed resourceVersion, setting `status.claim` alone), the namespace DELETE (UID precondition, background propagation)\n")
	p("  and the `spec.deactivated` merge patch.\n")
	p("- the write floor (claim, delete): the same claim and DELETE.\n")
	p("- the delete floor: the namespace DELETE alone, preconditioned on the namespace's UID and the resourceVersion listed, with\n")
	p("  background propagation: one request per manager.\n\n")
	p("A write floor lists its targets before it is timed; its rows count only the requests it makes while timed. What nsman wrote\n")
	p("per due manager is counted from the audit log, in \"Writes per due manager\" below.\n\n")
	p("Requests are the API server's audit log for the ServiceAccount (verb resource); nsman's own count by HTTP method\n")
	p("(`summary.requests`) also shows its discovery request. nsman runs through a small launcher process (test/nsmantest/launch.go)\n")
	p("that times it and reads its rusage: wall time includes starting the process, and peak RSS is nsman's own maxrss (a child\n")
	p("started by the driver itself would report the driver's peak; a figure near %d MiB would be the launcher's own). The floors run in\n", nsmantest.LauncherRSSMiB)
	p("the driver's process, but for the traffic part's process floor, which the launcher times as it times nsman. \"load avg after\" is\n")
	p("the 1-minute load average when the row was measured: the machine may be shared, and a load above the CPU count means\n")
	p("other work competed for it. The first column numbers the rows, which the targets and the analysis cite.\n")
}

// ruleMethod describes the rule's part.
func ruleMethod(b *strings.Builder, n, due int) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("A fresh control plane of its own. Seeded: %d namespaces labelled `%s=on`, each with one `app=e2e` pod, and one\n", n, ruleLabel)
	p("rule, `%s/%s`, in its own namespace (nsman runs with `--trusted-namespaces %s`), whose `namespaceSelector` selects\n", rulesNamespace, ruleName, rulesNamespace)
	p("them, with two policies in order: `TTL` 86400 s → DELETE, then `PODS_SUCCEED` (initialDelaySeconds 0, podLabels `app: e2e`)\n")
	p("→ DELETE. A namespace with no matching pod passes PODS_SUCCEED; so, to keep every namespace waiting, half the namespaces hold a\n")
	p("Running `app=e2e` pod and the other half an `app=e2e` pod left Pending (created, never started). The read floor lists the same\n")
	p("objects as the no-op sweep (the one rule and every namespace, paged), after nsman's first sweep; the next row adds the paged\n")
	p("list (metadata only) of every pod that has not succeeded, which a PODS_SUCCEED rule over that many namespaces needs to decide.\n")
	p("Then, %d times over, %d of the namespaces with a Running pod are made due by setting their pod's phase to Succeeded (the end\n", deleteRounds, due)
	p("of a test run), and nsman sweeps; what it wrote per namespace is in \"Writes per due manager\". In turn, the write floor\n")
	p("(annotate, delete) makes, per namespace, a merge patch of the namespace conditional on its listed resourceVersion that sets the\n")
	p("annotation `%s<digest of the rule UID>` to a claim, then the namespace DELETE (UID precondition, background propagation), on %d\n", status.PairAnnotationPrefix, due)
	p("other namespaces seeded for it (labelled `%s=off`, each with a Succeeded pod), with %d workers, unthrottled, as the\n", ruleLabel, floorConcurrency)
	p("ServiceAccount. The rows are the median runs; the notes list every run. Each sweep handles the namespaces the rule still\n")
	p("matches: those deleted in earlier rounds are terminating, which no rule matches.\n\n")
}

// idleMethod describes the part with half the managers IDLE.
func idleMethod(b *strings.Builder, sizes []int) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	s := int64(idleFor / time.Second)
	p("A fresh control plane of its own for each size up to %d (N = %s), where the targets are set: at 10000 managers, nsman's\n", idleMaxSize, andList(sizes))
	p("first sweep and the rounds below take about the %d s the IDLE policies wait, and a longer idleSeconds would add its wait,\n", s)
	p("untimed, to `%s`. Seeded: N managers, each in its own namespace and targeting it; first N/2 with one policy, `IDLE`\n", Command)
	p("(idleSeconds %d) → DELETE, then N/2 with `TTL` 86400 s → DELETE (not due). A sweep reads nothing for an IDLE policy until\n", s)
	p("idleSeconds have passed since its namespace's creation (or its `%s` annotation); from then on it reads\n", policy.TouchedAnnotation)
	p("the namespace's activity, the newest creation of a pod, ReplicaSet, ControllerRevision or Job in it: for the first %d\n", probe.ActivityIndexAfter)
	p("namespaces of a sweep (probe.ActivityIndexAfter), four paged lists in the namespace, metadata only; past them, the same four\n")
	p("lists once, cluster-wide and paged; from the first namespace when the managers' statuses say more than %d of them read their\n", probe.ActivityIndexAfter)
	p("activity in the sweep before, as after the first sweep here. An IDLE policy that would hold on the cluster-wide lists' answer is confirmed with the\n")
	p("namespace's own four lists; one that waits is not. So that every IDLE manager reads its activity and still waits, the\n")
	p("generator waits, untimed, until the IDLE namespaces are %d s old, then creates one ControllerRevision in each (no controller\n", s)
	p("runs on the API tier to act on it). Then nsman's first sweep records a status on every manager, and the read floor, the read\n")
	p("floor with the activity lists and a no-op sweep are measured %d times, interleaved. The read floor lists the managers and the\n", readRounds)
	p("namespaces as in \"Managers\"; the next row adds one paged LIST (metadata only, page size %d) of each of pods, ReplicaSets,\n", pageSize)
	p("ControllerRevisions and Jobs, cluster-wide: what IDLE must read. Every sweep must end before the first ControllerRevision is\n")
	p("%d s old, when the IDLE policies hold and a sweep would DELETE: the generator fails the run if one does not, and the no-op\n", s)
	p("sweep's note says how long before then the last one ended. The rows are the median runs; the notes list every run.\n\n")
}

// andList writes sizes as "1000", "1000 and 10000", "1, 2 and 3".
func andList(sizes []int) string {
	var ss []string
	for _, n := range sizes {
		ss = append(ss, strconv.Itoa(n))
	}
	if len(ss) < 2 {
		return strings.Join(ss, "")
	}
	return strings.Join(ss[:len(ss)-1], ", ") + " and " + ss[len(ss)-1]
}

// idleTargets computes the targets of the part with half the managers
// IDLE.
func idleTargets(idle rowSet, sizes []int) []target {
	var ts []target
	for _, n := range sizes {
		floor, lists, noop := idle.must(n, readFloorLabel), idle.must(n, idleFloorLabel), idle.must(n, noopLabel)
		r := ratio(noop.Wall, lists.Wall)
		ts = append(ts, setAt(idleMaxSize, target{N: n, Source: "25", Met: r <= idleNoopBound,
			What: fmt.Sprintf("IDLE: no-op sweep ≤ %.1f × read floor incl. the activity lists", idleNoopBound),
			Measured: fmt.Sprintf("%s / %s = %.2f× (floor without them: %s, %.2f×)",
				noop.at(), lists.at(), r, floor.at(), ratio(noop.Wall, floor.Wall))}))
		ts = append(ts, setAt(idleMaxSize, target{N: n, What: "IDLE: zero writes in a no-op sweep", Source: "25",
			Measured: fmt.Sprintf("%d (%s)", noop.writes(), noop.ref()), Met: noop.writes() == 0}))
	}
	return ts
}

// activityLists counts m's lists of what IDLE counts as activity.
func activityLists(m measurement) int {
	n := 0
	for _, r := range activityResources {
		n += m.count("list", r.Resource)
	}
	return n
}

// idleAnalysis writes what the part with half the managers IDLE says.
func idleAnalysis(b *strings.Builder, idle rowSet) {
	sizes := sizesOf(idle)
	if len(sizes) == 0 {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	var parts []string
	for _, n := range sizes {
		floor, lists, noop := idle.must(n, readFloorLabel), idle.must(n, idleFloorLabel), idle.must(n, noopLabel)
		parts = append(parts, fmt.Sprintf("at %d managers, the no-op sweep took %s: %.2f× the read floor with the activity lists\n"+
			"(%s) and %.2f× the read floor (%s), which reads no activity; it made %d requests, %d of them lists of pods, ReplicaSets,\n"+
			"ControllerRevisions and Jobs, where the floor with the activity lists made %d, %d of them those lists (more: %s)",
			n, noop.at(), ratio(noop.Wall, lists.Wall), lists.at(), ratio(noop.Wall, floor.Wall), floor.ref(),
			noop.total(), activityLists(noop), lists.total(), activityLists(lists),
			cmpOr(describe(moreRequests(noop, lists)), "none")))
	}
	p("**Half the managers IDLE.** %s.\n\n", upperFirst(strings.Join(parts, "; ")))
}

// upperFirst capitalizes s's first letter.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func cmpOr(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// moreRequests is what m made beyond base, by "verb resource": the
// requests base did not make as often.
func moreRequests(m, base measurement) map[string]int {
	more := map[string]int{}
	for k, v := range m.Audited {
		if d := v - base.Audited[k]; d > 0 {
			more[k] = d
		}
	}
	return more
}

// reclaimCost says what reading what the DELETEs free cost del against nr,
// the same sweep with --reclaim=false: the time and the requests it added.
func reclaimCost(del, nr measurement) string {
	return fmt.Sprintf("%s, %+d requests (%d vs %d; more: %s)", lessOrMore(del.Wall-nr.Wall),
		del.total()-nr.total(), del.total(), nr.total(), cmpOr(describe(moreRequests(del, nr)), "none"))
}

// writesOf splits m's audited writes into those made per due manager
// (count ÷ per, whole) and the rest, made once per run.
func writesOf(m measurement, per int) (each map[string]int, eachTotal int, besides map[string]int) {
	each, besides = map[string]int{}, map[string]int{}
	for k, v := range m.Audited {
		if isRead(k) {
			continue
		}
		if q := v / max(per, 1); q > 0 {
			each[k] = q
			eachTotal += q
		}
		if r := v % max(per, 1); r > 0 {
			besides[k] = r
		}
	}
	return each, eachTotal, besides
}

// perDue is what a DELETE row's writes are counted per: the managers
// nsman fired, or the floor's targets.
func perDue(m measurement, due int) int {
	if m.States != nil {
		return m.States[report.StateFired]
	}
	return due
}

// writesTable writes, for every DELETE row, its audited writes per due
// manager (or namespace) and those made once per run.
func writesTable(b *strings.Builder, rows, rules rowSet, sizes []int, ruleN, due int) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("\n## Writes per due manager\n\n")
	p("Each DELETE row's write requests (audit log) divided by the managers it fired (nsman) or its targets (a floor): what it\n")
	p("writes per due manager or namespace, and what is left, written once per run.\n\n")
	p("| # | N | measurement | writes | writes per due | which, per due | besides, once per run |\n|---:|---:|---|---:|---:|---|---|\n")
	line := func(m measurement) {
		per := perDue(m, due)
		each, total, besides := writesOf(m, per)
		rest := "–"
		if len(besides) > 0 {
			rest = describe(besides)
		}
		p("| %s | %d | %s | %d | %d | %s | %s |\n", m.ref(), m.N, m.What, m.writes(), total, cmpOr(describe(each), "–"), rest)
	}
	for _, n := range sizes {
		for _, label := range []string{deleteSweepLabel(due), noReclaimLabel(due), unthrottledLabel(due), writeFloorLabel(due), writeFloor2Label(due), deleteFloorLabel(due)} {
			if m, ok := rows.get(n, label); ok {
				line(m)
			}
		}
	}
	if len(rules) > 0 {
		for _, label := range []string{deleteSweepLabel(due), ruleWriteFloorLabel(due)} {
			if m, ok := rules.get(ruleN, label); ok {
				line(m)
			}
		}
	}
}

// managerTargets computes the managers' targets at each size.
func managerTargets(rows rowSet, sizes []int, due int) []target {
	var ts []target
	for _, n := range sizes {
		floor := rows.must(n, readFloorLabel)
		floorPods := rows.must(n, floorPlusPrefix)
		noop := rows.must(n, noopLabel)
		del := rows.must(n, deleteSweepLabel(due))
		wf := rows.must(n, writeFloorLabel(due))
		wf2 := rows.must(n, writeFloor2Label(due))
		df := rows.must(n, deleteFloorLabel(due))
		fast := rows.must(n, unthrottledTag)
		net := del.Wall - noop.Wall
		ts = append(ts, noopTarget(n, "", noop, floor, floorPods, "pods checks", noopBound, "6, OE"))
		ts = append(ts, target{N: n, What: "zero writes in a no-op sweep", Source: "6",
			Measured: fmt.Sprintf("%d (%s)", noop.writes(), noop.ref()), Met: noop.writes() == 0})
		pages, checks := floor.total(), floorPods.count("list", "pods")
		ts = append(ts, target{N: n, What: "requests ≤ list pages + pods checks", Source: "6",
			Measured: fmt.Sprintf("%d audited (%s%s) vs %d pages (%s) + %d checks (%s) = %d",
				noop.total(), noop.ref(), unaudited(noop), pages, floor.ref(), checks, floorPods.ref(), pages+checks),
			Met: noop.total() <= pages+checks})
		ts = append(ts, rssTarget(rowSet(rows), n, "", noop, del, "6, OE"))
		dr := ratio(del.Wall, wf.Wall)
		ts = append(ts, target{N: n, Source: "6",
			What: fmt.Sprintf("%d DELETEs ≤ %.1f × write floor (claim, delete, deactivate) and ≤ %.0f s", due, deleteBound, deleteWallBound.Seconds()),
			Measured: fmt.Sprintf("%s / %s = %.2f× (sweep less no-op sweep: %s, %.2f×; unthrottled diagnostic: %s, %.2f×)",
				del.at(), wf.at(), dr, sec(net), ratio(net, wf.Wall), fast.at(), ratio(fast.Wall, wf.Wall)),
			Met: dr <= deleteBound && del.Wall <= deleteWallBound})
		dr2 := ratio(del.Wall, wf2.Wall)
		ts = append(ts, setAt(deleteTargetSize, target{N: n, Source: "12, OE",
			What:     fmt.Sprintf("%d DELETEs of their own namespace ≤ %.1f × write floor (claim, delete)", due, claimDeleteBound),
			Measured: fmt.Sprintf("%s / %s = %.2f× (sweep less no-op sweep: %s, %.2f×)", del.at(), wf2.at(), dr2, sec(net), ratio(net, wf2.Wall)),
			Met:      dr2 <= claimDeleteBound}))
		dr3 := ratio(del.Wall, df.Wall)
		ts = append(ts, setAt(deleteTargetSize, target{N: n, Source: "OE",
			What:     fmt.Sprintf("%d self-contained DELETEs ≤ %.1f × delete floor", due, deleteFloorBound),
			Measured: fmt.Sprintf("%s / %s = %.2f× (sweep less no-op sweep: %s, %.2f×)", del.at(), df.at(), dr3, sec(net), ratio(net, df.Wall)),
			Met:      dr3 <= deleteFloorBound}))
		nr := rows.must(n, noReclaimLabel(due))
		rr := ratio(del.Wall, nr.Wall)
		ts = append(ts, setAt(deleteTargetSize, target{N: n, Source: "24",
			What:     fmt.Sprintf("%d DELETEs with reclaim ≤ %.1f × without", due, reclaimBound),
			Measured: fmt.Sprintf("%s / %s = %.2f× (%s)", del.at(), nr.at(), rr, reclaimCost(del, nr)),
			Met:      rr <= reclaimBound}))
		dw, fw := del.writes(), df.writes()
		ts = append(ts, target{N: n, Source: "OE",
			What: fmt.Sprintf("writes of the %d-DELETE sweep ≤ the delete floor's (a DELETE is its own claim)", due),
			Measured: fmt.Sprintf("%d (%s: %d per fired manager) vs %d (%s)",
				dw, del.ref(), dw/max(perDue(del, due), 1), fw, df.ref()),
			Met: dw <= fw})
	}
	return ts
}

// ruleTargets computes the rule's targets.
func ruleTargets(rules rowSet, n, due int) []target {
	floor := rules.must(n, readFloorLabel)
	floorPods := rules.must(n, floorPlusPrefix)
	noop := rules.must(n, noopLabel)
	del := rules.must(n, deleteSweepLabel(due))
	wf := rules.must(n, ruleWriteFloorLabel(due))
	ts := []target{
		noopTarget(n, "rule: ", noop, floor, floorPods, "the pods list", ruleNoopBound, "13"),
		{N: n, What: "rule: zero writes in a no-op sweep", Source: "13",
			Measured: fmt.Sprintf("%d (%s)", noop.writes(), noop.ref()), Met: noop.writes() == 0},
		rssTarget(rules, n, "rule: ", noop, del, "13, OE"),
	}
	dr, net := ratio(del.Wall, wf.Wall), del.Wall-noop.Wall
	ts = append(ts, target{N: n, Source: "13",
		What:     fmt.Sprintf("rule: %d DELETEs ≤ %.1f × write floor (annotate, delete)", due, deleteBound),
		Measured: fmt.Sprintf("%s / %s = %.2f× (sweep less no-op sweep: %s, %.2f×)", del.at(), wf.at(), dr, sec(net), ratio(net, wf.Wall)),
		Met:      dr <= deleteBound})
	return ts
}

// noopTarget is the target of a no-op sweep against the read floor (and,
// for comparison, against the floor with plus, the reads it adds).
func noopTarget(n int, prefix string, noop, floor, plus measurement, plusWhat string, bound float64, source string) target {
	r := ratio(noop.Wall, floor.Wall)
	tg := target{N: n, Source: source, Met: r <= bound,
		What: fmt.Sprintf("%sno-op sweep ≤ %.1f × read floor", prefix, bound),
		Measured: fmt.Sprintf("%s / %s = %.2f× (floor incl. %s: %s, %.2f×)",
			noop.at(), floor.at(), r, plusWhat, plus.at(), ratio(noop.Wall, plus.Wall))}
	return setAt(noopTargetSize, tg)
}

// setAt marks target tg as not set unless it is measured at size n.
func setAt(n int, tg target) target {
	if tg.N != n {
		tg.NotSet = fmt.Sprintf("set at %d", n)
	}
	return tg
}

// rssTarget is the target of peak RSS over every nsman sweep of size n.
func rssTarget(rows rowSet, n int, prefix string, noop, del measurement, source string) target {
	peak, at := peakRSS(rows, n)
	return target{N: n, Source: source, Met: float64(peak)/1024 <= rssBoundMiB,
		What: fmt.Sprintf("%speak RSS ≤ %d MiB, over every nsman sweep", prefix, rssBoundMiB),
		Measured: fmt.Sprintf("%s (%s; no-op sweeps up to %s, DELETE sweeps up to %s)",
			mib(peak), at.ref(), mib(max(noop.PeakRSS, noop.MaxRSS)), mib(max(del.PeakRSS, del.MaxRSS)))}
}

// peakRSS is the highest peak RSS of nsman among the rows of size n, and
// its row: every sweep of nsman as shipped counts, each run of a median
// row included; the GOGC=100 diagnostic does not.
func peakRSS(rows rowSet, n int) (int64, measurement) {
	var peak int64
	var at measurement
	for _, m := range rows {
		if m.N == n && m.What != gogcLabel {
			if v := max(m.MaxRSS, m.PeakRSS); v > peak {
				peak, at = v, m
			}
		}
	}
	return peak, at
}

// growth writes the managers' growth from the smallest size to the
// largest.
func growth(b *strings.Builder, rows rowSet, sizes []int, due int) {
	if len(sizes) < 2 {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	lo, hi := sizes[0], sizes[len(sizes)-1]
	p("\n## Growth from %d to %d managers (%.0f× the managers)\n\n", lo, hi, float64(hi)/float64(lo))
	p("| measurement | wall at %d | wall at %d | growth | per manager at %d | per manager at %d |\n|---|---:|---:|---:|---:|---:|\n", lo, hi, lo, hi)
	for _, prefix := range []string{readFloorLabel, floorPlusPrefix, firstSweepLabel, noopLabel, deleteSweepLabel(due)} {
		a, z := rows.must(lo, prefix), rows.must(hi, prefix)
		p("| %s | %s | %s | %.1f× | %.0f µs | %.0f µs |\n", a.What, a.at(), z.at(), ratio(z.Wall, a.Wall),
			float64(a.Wall.Microseconds())/float64(lo), float64(z.Wall.Microseconds())/float64(hi))
	}
	a, z := rows.must(lo, noopLabel), rows.must(hi, noopLabel)
	p("\nPeak RSS of the no-op sweep: %s at %d (%s), %s at %d (%s). Requests: %d at %d, %d at %d.\n",
		mib(a.MaxRSS), lo, a.ref(), mib(z.MaxRSS), hi, z.ref(), a.total(), lo, z.total(), hi)
}

// sharding writes the DELETE sweep split among shards.
func sharding(b *strings.Builder, rows rowSet, sizes []int, due int) {
	if len(sizes) == 0 {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("\n## Sharding: %d due DELETEs among shards run side by side\n\n", due)
	p("Each shard's sweep is a process of its own, with `--shard-count` and `--shard-index`.\n\n")
	p("| N | shards | row | wall | speed-up | requests | reads | writes | peak RSS of a shard | fired per shard |\n|---:|---:|---|---:|---:|---:|---:|---:|---:|---|\n")
	for _, n := range sizes {
		one := rows.must(n, deleteSweepLabel(due))
		p("| %d | 1 | %s | %s | 1.0× | %d | %d | %d | %s | %d |\n", n, one.ref(), sec(one.Wall), one.total(), one.reads(), one.writes(), mib(one.MaxRSS), one.States[report.StateFired])
		for _, shards := range shardCounts {
			m, ok := rows.get(n, shardsLabel(due, shards))
			if !ok {
				continue
			}
			p("| %d | %d | %s | %s | %.2f× | %d | %d | %d | %s | %s |\n", n, shards, m.ref(), sec(m.Wall), ratio(one.Wall, m.Wall),
				m.total(), m.reads(), m.writes(), mib(m.MaxRSS), strings.TrimPrefix(m.Note, "shards: "))
		}
	}
}

// analysis writes what the rows say, each figure computed from the rows it
// cites.
func analysis(b *strings.Builder, rep benchRun, rows, rules, idle, hostile, sleep, owners, traffic, params, warn rowSet, targets []target) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	due := rep.Due
	p("\n## Analysis\n\n")
	p("Generated like the rest: each figure below is computed from the rows it cites.\n\n")

	// Targets.
	var set, met int
	var missed []string
	for _, tg := range targets {
		if tg.NotSet != "" {
			continue
		}
		set++
		if tg.Met {
			met++
		} else {
			missed = append(missed, fmt.Sprintf("%s at %d (%s)", tg.What, tg.N, tg.Measured))
		}
	}
	p("**Targets.** %d of the %d targets set at the sizes measured are met.", met, set)
	if len(missed) > 0 {
		p(" Not met: %s.", strings.Join(missed, "; "))
	}
	p("\n\n")

	// Load and spread.
	all := slices.Concat(rows, rules, idle, hostile, sleep, owners, traffic, params, warn)
	if len(all) > 0 {
		lo, hi := all[0], all[0]
		busy := 0
		for _, m := range all {
			if load(m) < load(lo) {
				lo = m
			}
			if load(m) > load(hi) {
				hi = m
			}
			if load(m) > float64(runtime.NumCPU()) {
				busy++
			}
		}
		if lo.Load == hi.Load {
			p("**Load.** The 1-minute load average was %s after every row, on %d CPUs", lo.Load, runtime.NumCPU())
		} else {
			p("**Load.** The 1-minute load average after each row ranged from %s (%s) to %s (%s) on %d CPUs", lo.Load, lo.ref(), hi.Load, hi.ref(), runtime.NumCPU())
		}
		if busy > 0 {
			p("; %d of the %d rows were measured at a load above the CPU count, when other work competed for the machine", busy, len(all))
		}
		p(".")
		var widest measurement
		var spread float64
		for _, m := range all {
			if len(m.Runs) < 2 {
				continue
			}
			if s := float64(slices.Max(m.Runs)) / float64(slices.Min(m.Runs)); s > spread {
				widest, spread = m, s
			}
		}
		if spread > 0 {
			p(" Among the rows that are medians, the widest spread is %s (%s at %d): its slowest run took %.2f× its fastest (%s);\n",
				widest.ref(), widest.What, widest.N, spread, durations(widest.Runs))
			p("a ratio between rows carries that much noise.")
		}
		p("\n\n")
	}

	for _, n := range rep.Sizes {
		floor, floorPods, noop := rows.must(n, readFloorLabel), rows.must(n, floorPlusPrefix), rows.must(n, noopLabel)
		del, fast := rows.must(n, deleteSweepLabel(due)), rows.must(n, unthrottledTag)
		wf, wf2, df := rows.must(n, writeFloorLabel(due)), rows.must(n, writeFloor2Label(due)), rows.must(n, deleteFloorLabel(due))
		fired := perDue(del, due)
		each, perFired, besides := writesOf(del, fired)
		_, perTarget, _ := writesOf(df, due)
		p("**%d managers.** The no-op sweep took %s: %.2f× the read floor (%s) and %.2f× the floor with the pods checks (%s);\n",
			n, noop.at(), ratio(noop.Wall, floor.Wall), floor.ref(), ratio(noop.Wall, floorPods.Wall), floorPods.ref())
		p("it made %d requests, %d of them lists of pods, where the floor with the pods checks made %d.\n",
			noop.total(), noop.count("list", "pods"), floorPods.total())
		p("The sweep of %d due managers took %s and fired %d; it wrote %d requests, %d per fired manager (%s)",
			due, del.at(), fired, del.writes(), perFired, cmpOr(describe(each), "none"))
		if len(besides) > 0 {
			p(" and %s besides", describe(besides))
		}
		p(", where the delete floor writes %d per manager (%s).\n", perTarget, df.ref())
		p("Its time is %.2f× the delete floor's (%s), %.2f× the write floor (claim, delete)'s (%s) and %.2f× the write floor\n",
			ratio(del.Wall, df.Wall), df.at(), ratio(del.Wall, wf2.Wall), wf2.at(), ratio(del.Wall, wf.Wall))
		p("(claim, delete, deactivate)'s (%s). Less the no-op sweep's time, which the floors are spared (they are handed their targets),\n", wf.at())
		p("it is %s, %.2f× the delete floor's. Without client-side throttling the same sweep took %s, %s than with nsman's defaults.\n",
			sec(del.Wall-noop.Wall), ratio(del.Wall-noop.Wall, df.Wall), fast.at(), lessOrMore(fast.Wall-del.Wall))
		nr := rows.must(n, noReclaimLabel(due))
		p("With `--reclaim=false` the same sweep took %s; reading what the DELETEs free made it %.2f× that: %s.\n\n",
			nr.at(), ratio(del.Wall, nr.Wall), reclaimCost(del, nr))
	}

	if len(rules) > 0 {
		n := rules[0].N
		floor, floorPods, noop := rules.must(n, readFloorLabel), rules.must(n, floorPlusPrefix), rules.must(n, noopLabel)
		del, wf := rules.must(n, deleteSweepLabel(due)), rules.must(n, ruleWriteFloorLabel(due))
		fired := perDue(del, due)
		each, perFired, besides := writesOf(del, fired)
		_, perTarget, _ := writesOf(wf, due)
		p("**One rule over %d namespaces.** The no-op sweep took %s: %.2f× the read floor (%s), which reads no pods, and %.2f× the\n",
			n, noop.at(), ratio(noop.Wall, floor.Wall), floor.ref(), ratio(noop.Wall, floorPods.Wall))
		p("floor that also lists the pods that have not succeeded (%s), which a PODS_SUCCEED rule needs to decide; it made %d requests,\n", floorPods.at(), noop.total())
		p("%d of them lists of pods. The DELETE sweep took %s and fired %d; it wrote %d requests, %d per namespace (%s)",
			noop.count("list", "pods"), del.at(), fired, del.writes(), perFired, cmpOr(describe(each), "none"))
		if len(besides) > 0 {
			p(" and %s besides", describe(besides))
		}
		p(",\nwhere the write floor (annotate, delete) writes %d per namespace: %.2f× that floor's time (%s).\n\n", perTarget, ratio(del.Wall, wf.Wall), wf.at())
	}
	idleAnalysis(b, idle)
	sleepAnalysis(b, sleep)
	ownersAnalysis(b, owners)
	trafficAnalysis(b, traffic)
	paramsAnalysis(b, params)

	p("**Peak RSS.**")
	for _, n := range rep.Sizes {
		peak, at := peakRSS(rows, n)
		gogc, noop := rows.must(n, gogcLabel), rows.must(n, noopLabel)
		p(" At %d managers, the highest over every nsman sweep is %s (%s), against the %d MiB bound; at Go's default GC target the\n", n, mib(peak), at.ref(), rssBoundMiB)
		p("no-op sweep peaked at %s (%s), against %s with nsman's (%s).", mib(gogc.MaxRSS), gogc.ref(), mib(noop.MaxRSS), noop.ref())
	}
	if len(rules) > 0 {
		peak, at := peakRSS(rules, rules[0].N)
		p(" The rule over %d namespaces: %s (%s).", rules[0].N, mib(peak), at.ref())
	}
	for _, n := range sizesOf(idle) {
		peak, at := peakRSS(idle, n)
		p(" %d managers, half of them IDLE: %s (%s).", n, mib(peak), at.ref())
	}
	for _, m := range hostile {
		p(" The hostile tenant: %s (%s), against the %d MiB bound.", mib(m.MaxRSS), m.ref(), hostileRSSBoundMiB)
	}
	if len(sleep) > 0 {
		peak, at := peakRSS(sleep, sleep[0].N)
		p(" The SLEEP rule over %d namespaces: %s (%s).", sleep[0].N, mib(peak), at.ref())
	}
	for _, n := range sizesOf(owners) {
		peak, at := peakRSS(owners, n)
		p(" The rule with OWNER_GONE over %d namespaces: %s (%s).", n, mib(peak), at.ref())
	}
	for _, n := range sizesOf(traffic) {
		peak, at := peakRSS(trafficSweeps(traffic), n)
		p(" The rule with IDLE from traffic over %d namespaces: %s (%s).", n, mib(peak), at.ref())
	}
	for _, n := range sizesOf(params) {
		peak, at := peakRSS(params, n)
		p(" The SLEEP with replicas, loadBalancers and patches over %d namespaces: %s (%s).", n, mib(peak), at.ref())
	}
	for _, n := range sizesOf(warn) {
		peak, at := peakRSS(warn, n)
		p(" The warnings over %d managers: %s (%s).", n, mib(peak), at.ref())
	}
	p("\n")

	if len(rep.Sizes) > 0 {
		p("\n**Sharding.**")
		for _, n := range rep.Sizes {
			one := rows.must(n, deleteSweepLabel(due))
			var parts []string
			for _, shards := range shardCounts {
				if m, ok := rows.get(n, shardsLabel(due, shards)); ok {
					parts = append(parts, fmt.Sprintf("%d shards side by side took %s against %s for one, a speed-up of %.2f×, with %d reads against %d",
						shards, m.at(), one.at(), ratio(one.Wall, m.Wall), m.reads(), one.reads()))
				}
			}
			p(" At %d managers, %s.", n, strings.Join(parts, "; "))
		}
		p(" Each shard makes its own reads, and the shards and the API server share the machine's CPUs.\n")
	}
}

// load is m's load average as a number.
func load(m measurement) float64 {
	v, err := strconv.ParseFloat(m.Load, 64)
	if err != nil {
		return 0
	}
	return v
}

// lessOrMore says how much shorter (d < 0) or longer a time was.
func lessOrMore(d time.Duration) string {
	if d < 0 {
		return sec(-d) + " less"
	}
	return sec(d) + " more"
}

// durations lists run times in the order run.
func durations(ds []time.Duration) string {
	var ws []string
	for _, d := range ds {
		ws = append(ws, fmt.Sprintf("%.2f", d.Seconds()))
	}
	return strings.Join(ws, ", ") + " s"
}

// table writes rows as a Markdown table; counted names what the sweeps'
// states count (managers, pairs).
func table(b *strings.Builder, rows []measurement, counted string) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("| # | N | measurement | wall | requests | writes | requests by verb | nsman summary.requests | peak RSS | %s by state / note | load avg after |\n", counted)
	p("|---:|---:|---|---:|---:|---:|---|---|---:|---|---:|\n")
	for _, m := range rows {
		rss := "–"
		if m.MaxRSS > 0 {
			rss = mib(m.MaxRSS)
		}
		note := m.Note
		if m.States != nil {
			parts := map[string]int{}
			for k, v := range m.States {
				parts[string(k)] = v
			}
			note = strings.Trim(strings.TrimSuffix(describe(parts)+"; "+m.Note, "; "), "; ")
		}
		http := "–"
		if m.HTTP != nil {
			http = describe(m.HTTP)
		}
		p("| %s | %d | %s | %s | %d | %d | %s | %s | %s | %s | %s |\n", m.ref(), m.N, m.What, sec(m.Wall), m.total(), m.writes(), describe(m.Audited), http, rss, note, m.Load)
	}
}

// unaudited notes the requests nsman counted beyond those audited: its
// discovery request.
func unaudited(m measurement) string {
	if d := httpTotal(m.HTTP) - m.total(); d > 0 {
		return fmt.Sprintf("; +%d that nsman counted, its discovery", d)
	}
	return ""
}

func httpTotal(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// loadAverage is the 1-minute load average.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(data))[0]
}

// cpuModel is the first "model name" in /proc/cpuinfo: figures bound by the
// API server differ by up to 2× between machines of the same size.
func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "model unknown"
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if key, value, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(key) == "model name" {
			return strings.TrimSpace(value)
		}
	}
	return "model unknown"
}

// memTotal is MemTotal from /proc/meminfo, in GiB.
func memTotal() string {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "unknown"
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kib, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err == nil {
				return fmt.Sprintf("%.1f GiB", kib/(1<<20))
			}
		}
	}
	return "unknown"
}
