package bench

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// Command is how BENCHMARKS.md says to reproduce it.
const Command = "make bench"

// parts are what NSMAN_BENCH_ONLY may name: the managers, the rule (issue
// 13), half the managers IDLE (issue 25), the hostile tenant (issue 31) or
// its fat-workloads row alone (issue 44), a SLEEP rule (issue 33), a rule
// with OWNER_GONE over namespaces Argo CD Applications own (issue 46), a
// rule with IDLE from traffic (issue 47), a SLEEP with all three parameters
// (issue 47), warnings before a DELETE (issue 48).
var parts = []string{"managers", "rules", "idle", "hostile", fatOnly, "sleep", "owners", "traffic", "params", "warn"}

// The sizes and the due managers of a complete run; BENCHMARKS.md is
// written only from one.
var defaultSizes = []int{1000, 10000}

const defaultDue = 1000

// TestBenchmarks seeds N managers for each size in NSMAN_BENCH_SIZES
// (default 1000,10000), each in a fresh API-tier control plane, then one
// rule over as many namespaces as the largest size, in another, then, for
// each size up to 1000, N managers half of which are IDLE, in another, the
// hostile tenant in another, then a SLEEP rule over as many namespaces as
// the largest size up to 1000, in another, then, for each size, a rule
// with OWNER_GONE over N namespaces, each owned by an Argo CD Application,
// in another, then a rule with IDLE from ingress-nginx's traffic over
// trafficSize namespaces, a real Prometheus asked, in another, then a
// SLEEP rule with replicas, loadBalancers and patches over as many
// namespaces as the SLEEP part's, in another, then warnSize managers
// warned before a DELETE (issue 48), in another, measures the floors and
// nsman sweeps, prints the document and writes it to BENCHMARKS.md
// (NSMAN_BENCH_OUT to write elsewhere).
// NSMAN_BENCH_GO_PKGS names packages whose Go benchmarks it runs first, on
// the same tree. NSMAN_BENCH_ONLY=managers, =rules, =idle, =hostile, =sleep,
// =owners, =traffic, =params or =warn runs one part alone; =hostile-workloads the
// hostile part's fat-workloads row alone.
//
// It names the commit measured, builds the nsman it measures from the same
// tree, and writes BENCHMARKS.md only from a complete run (default sizes
// and due managers, every part, the Go benchmarks) on a tree without
// uncommitted changes, unless NSMAN_BENCH_ALLOW_MODIFIED=1, when the header
// says the tree was modified.
func TestBenchmarks(t *testing.T) {
	if os.Getenv("NSMAN_BENCH") != "1" {
		t.Skip("control-plane benchmarks run with NSMAN_BENCH=1 (make bench)")
	}
	sizes, err := parseSizes(os.Getenv("NSMAN_BENCH_SIZES"))
	if err != nil {
		t.Fatal(err)
	}
	only := os.Getenv("NSMAN_BENCH_ONLY")
	if only != "" && !slices.Contains(parts, only) {
		t.Fatalf("NSMAN_BENCH_ONLY=%q: want one of %s", only, strings.Join(parts, ", "))
	}
	runs := func(part string) bool { return only == "" || only == part }
	if only == "idle" && len(idleSizes(sizes)) == 0 {
		t.Fatalf("NSMAN_BENCH_SIZES=%s: the IDLE part runs at sizes up to %d only", os.Getenv("NSMAN_BENCH_SIZES"), idleMaxSize)
	}
	due := defaultDue
	if v := os.Getenv("NSMAN_BENCH_DUE"); v != "" {
		if due, err = strconv.Atoi(v); err != nil || due < 1 {
			t.Fatalf("NSMAN_BENCH_DUE=%q: want a positive number", v)
		}
	}
	goPkgs := strings.Fields(os.Getenv("NSMAN_BENCH_GO_PKGS"))
	var partial []string
	if !slices.Equal(sizes, defaultSizes) {
		partial = append(partial, "NSMAN_BENCH_SIZES="+os.Getenv("NSMAN_BENCH_SIZES"))
	}
	if only != "" {
		partial = append(partial, "NSMAN_BENCH_ONLY="+only)
	}
	if due != defaultDue {
		partial = append(partial, fmt.Sprintf("NSMAN_BENCH_DUE=%d", due))
	}
	if len(goPkgs) == 0 {
		partial = append(partial, "no Go benchmarks: NSMAN_BENCH_GO_PKGS unset")
	}

	root := nsmantest.RepoRoot()
	out := os.Getenv("NSMAN_BENCH_OUT")
	if out == "" {
		out = benchmarksFile(root)
	}
	official := isBenchmarksFile(out, root)
	allowModified := os.Getenv(allowModifiedEnv) == "1"
	tree, err := readTree(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := mayWrite(official, partial, tree, allowModified); err != nil {
		t.Fatal(err)
	}
	t.Logf("measuring %s", tree)

	bin := filepath.Join(t.TempDir(), "nsman")
	version, flags, err := buildNsman(root, bin, tree)
	if err != nil {
		t.Fatal(err)
	}
	// The floors stand for nsman at its default concurrency.
	if got := flags["concurrency"]; got != strconv.Itoa(floorConcurrency) {
		t.Fatalf("nsman sweep --concurrency defaults to %q, the floors run %d workers (sweep.DefaultConcurrency)", got, floorConcurrency)
	}
	rep := benchRun{Sizes: sizes, Due: due, Began: time.Now(), Tree: tree, AllowModified: allowModified,
		Nsman: version, Flags: flags, GoPkgs: goPkgs, Partial: partial}
	if len(goPkgs) > 0 {
		if rep.GoBench, err = goBenchmarks(t.Context(), root, goPkgs); err != nil {
			t.Fatal(err)
		}
	}

	if runs("managers") {
		for _, n := range sizes {
			r, v := measureSize(t, bin, n, due)
			rep.Rows = append(rep.Rows, r...)
			rep.KubeVersion = v
		}
	} else {
		rep.Sizes = nil
	}
	if runs("rules") {
		rep.Rules, rep.KubeVersion = measureRules(t, bin, slices.Max(sizes), due)
	}
	if runs("idle") {
		at := idleSizes(sizes)
		if len(at) == 0 {
			t.Logf("NSMAN_BENCH_SIZES=%s: the IDLE part runs at sizes up to %d only; not run", os.Getenv("NSMAN_BENCH_SIZES"), idleMaxSize)
		}
		for _, n := range at {
			r, v := measureIdle(t, bin, n)
			rep.Idle = append(rep.Idle, r...)
			rep.KubeVersion = v
		}
	}
	if runs("hostile") {
		rep.Hostile, rep.KubeVersion = measureHostile(t, bin)
	}
	if runs("hostile") || only == fatOnly {
		fat, version := measureFatWorkloads(t, bin)
		rep.Hostile, rep.KubeVersion = append(rep.Hostile, fat...), version
	}
	if runs("sleep") {
		rep.Sleep, rep.KubeVersion = measureSleep(t, bin, sleepSize(sizes))
	}
	if runs("owners") {
		for _, n := range sizes {
			r, v := measureOwners(t, bin, n)
			rep.Owners = append(rep.Owners, r...)
			rep.KubeVersion = v
		}
	}
	if runs("traffic") {
		rep.Traffic, rep.KubeVersion = measureTraffic(t, bin)
	}
	if runs("params") {
		rep.Params, rep.KubeVersion = measureParams(t, bin, sleepSize(sizes))
	}
	if runs("warn") {
		rep.Warn, rep.KubeVersion = measureWarn(t, bin)
	}
	if t.Failed() && official {
		t.Fatal("not writing BENCHMARKS.md: a measurement failed its checks")
	}

	after, err := readTree(root)
	if err != nil {
		t.Fatal(err)
	}
	if !after.same(tree) {
		if official {
			t.Fatalf("the tree changed during the run: it was %s, it is %s; not writing BENCHMARKS.md", tree, after)
		}
		rep.ChangedTo = &after
	}
	doc := render(rep)
	fmt.Println(doc)
	if err := os.WriteFile(out, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", out)
}

func parseSizes(s string) ([]int, error) {
	if s == "" {
		return slices.Clone(defaultSizes), nil
	}
	var sizes []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 {
			return nil, fmt.Errorf("NSMAN_BENCH_SIZES=%q: want sizes such as 1000,10000", s)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// goBenchmarks runs the Go benchmarks of pkgs in root, printing their
// output as it comes, and returns it.
func goBenchmarks(ctx context.Context, root string, pkgs []string) (string, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", append([]string{"test", "-run", "^$", "-bench", ".", "-benchmem"}, pkgs...)...)
	cmd.Dir = root
	cmd.Stdout = io.MultiWriter(os.Stdout, &out)
	cmd.Stderr = io.MultiWriter(os.Stderr, &out)
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go test -bench: %w", err)
	}
	return out.String(), nil
}

// deleteRounds is how many times the DELETE sweep and the write floors
// are measured, interleaved.
const deleteRounds = 3

// roundSets are the sets seeded for each round of the DELETE sweeps (with
// and without --reclaim) and the write floors, named with the round's
// number appended.
var roundSets = []string{setDue, setDueNoReclaim, setWriteFloor, setWriteFloor2, setDeleteFloor}

// measureSize starts a control plane, seeds n background managers and
// measures, in order: nsman's first sweep (which records status on every
// manager), then, interleaved, the read floor, the read floor with the pods
// checks and a no-op sweep, then, with due more managers due for DELETE
// and as many again for the same sweep with --reclaim=false and for each
// write floor, interleaved, nsman's DELETE sweep, the same sweep with
// --reclaim=false and the write floors, and the diagnostics.
func measureSize(t *testing.T, bin string, n, due int) ([]measurement, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Minute)
	defer cancel()
	s := startSession(ctx, t, bin, n)
	defer s.c.Stop()

	began := time.Now()
	kindOf := func(i int) kind {
		if i%2 == 0 {
			return ttlNotDue
		}
		return podsRunning
	}
	if err := s.seed.seed(ctx, "bench", setBackground, n, kindOf); err != nil {
		t.Fatalf("seed: %v", err)
	}
	s.step("seeded %d managers in %s", n, time.Since(began).Round(time.Millisecond))
	var podsNamespaces []string
	for i := range n {
		if kindOf(i) == podsRunning {
			podsNamespaces = append(podsNamespaces, seededName("bench", i))
		}
	}

	if _, err := s.audit.next(ctx); err != nil {
		t.Fatal(err)
	}
	// (b) The first sweep records a status on every manager; the next one
	// changes nothing and must write nothing.
	s.sweepRow("nsman sweep, first (records status)")

	// (a) The read floor, over the same objects as the no-op sweep: with
	// the status the first sweep recorded, a manager is about twice as
	// large as when seeded.
	s.readRows(fmt.Sprintf("floor + pods checks (%d workers)", floorConcurrency), func() (string, error) {
		return fmt.Sprintf("%d pods checks", len(podsNamespaces)), floorPodsChecks(ctx, s.sa, podsNamespaces)
	})
	// Diagnostic: the same sweep at Go's default GC target, to show what
	// nsman's own (memory.SetGCPercent) saves.
	s.rows = append(s.rows, s.measureCommand([]string{"env", "GOGC=100", bin}, gogcLabel))

	// (c) due managers due for DELETE, each in the namespace it deletes,
	// and as many for each write floor, in deleteRounds interleaved runs:
	// one run of each on a shared 2-core machine varies by a third, so the
	// rows are the medians. Each set is seeded just before its run, and
	// what a run deleted finalized after it (see seeder.finalize): a run
	// finds the N managers, their namespaces and its own set, no other.
	dueKind := func(int) kind { return ttlDue }
	seeded := func(set string) string {
		began := time.Now()
		if err := s.seed.seed(ctx, set, set, due, dueKind); err != nil {
			t.Fatalf("seed %s: %v", set, err)
		}
		s.step("seeded %d due managers (%s) in %s", due, set, time.Since(began).Round(time.Millisecond))
		return set
	}
	finalized := func(set string, m measurement) measurement {
		if err := s.seed.finalize(ctx, set, due); err != nil {
			t.Fatalf("finalize %s: %v", set, err)
		}
		return m
	}
	only := func(set string) string { return setLabel + " in (" + setBackground + "," + set + ")" }
	// timed measures do over targets, which were listed before: the rows
	// count only the requests made while timed.
	timed := func(what string, targets []writeTarget, do func([]writeTarget) error) measurement {
		if len(targets) != due {
			t.Fatalf("%s: %d targets listed, want %d", what, len(targets), due)
		}
		if _, err := s.audit.next(ctx); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := do(targets); err != nil {
			t.Fatal(err)
		}
		return s.measured(measurement{What: what, Wall: time.Since(start)})
	}
	// writes measures the write floor which over set.
	writes := func(what, set string, which writeKind) measurement {
		targets, err := prepareWriteFloor(ctx, s.sa, set)
		if err != nil {
			t.Fatal(err)
		}
		return timed(what, targets, func(ts []writeTarget) error { return writeFloor(ctx, s.sa, ts, which) })
	}
	// deletes measures the delete floor over set.
	deletes := func(what, set string) measurement {
		targets, err := namespaceTargets(ctx, s.sa, set)
		if err != nil {
			t.Fatal(err)
		}
		return timed(what, targets, func(ts []writeTarget) error { return deleteFloor(ctx, s.sa, ts) })
	}
	// reclaimReads are the lists only a sweep that reads what its DELETEs
	// free makes (internal/reclaim/reclaim.go): the pods' are not told apart from the
	// pods checks'.
	reclaimReads := func(m measurement) int {
		return m.count("list", "persistentvolumeclaims") + m.count("list", "services")
	}
	var dels, noReclaims, floors, floors2, deleteFloors []measurement
	for r := range deleteRounds {
		set := seeded(fmt.Sprintf("%s%d", setDue, r))
		if _, err := s.audit.next(ctx); err != nil {
			t.Fatal(err)
		}
		m := finalized(set, s.measureSweep(deleteSweepLabel(due), "-l", only(set)))
		if got := m.States[report.StateFired]; got != due {
			t.Errorf("N=%d: DELETE sweep %d fired %d, want %d (%v)", n, r, got, due, m.States)
		}
		if reclaimReads(m) == 0 {
			t.Errorf("N=%d: DELETE sweep %d listed no PersistentVolumeClaims or Services: it did not read what its DELETEs free (%s)", n, r, describe(m.Audited))
		}
		dels = append(dels, m)
		// The same sweep, with --reclaim=false, over a set of its own.
		set = seeded(fmt.Sprintf("%s%d", setDueNoReclaim, r))
		if _, err := s.audit.next(ctx); err != nil {
			t.Fatal(err)
		}
		m = finalized(set, s.measureSweep(noReclaimLabel(due), "-l", only(set), "--reclaim=false"))
		if got := m.States[report.StateFired]; got != due {
			t.Errorf("N=%d: DELETE sweep %d with --reclaim=false fired %d, want %d (%v)", n, r, got, due, m.States)
		}
		if got := reclaimReads(m); got != 0 {
			t.Errorf("N=%d: DELETE sweep %d with --reclaim=false listed PersistentVolumeClaims or Services %d times (%s)", n, r, got, describe(m.Audited))
		}
		noReclaims = append(noReclaims, m)
		set = seeded(fmt.Sprintf("%s%d", setWriteFloor, r))
		floors = append(floors, finalized(set, writes(writeFloorLabel(due), set, claimDeleteDeactivate)))
		set = seeded(fmt.Sprintf("%s%d", setWriteFloor2, r))
		floors2 = append(floors2, finalized(set, writes(writeFloor2Label(due), set, claimDelete)))
		set = seeded(fmt.Sprintf("%s%d", setDeleteFloor, r))
		deleteFloors = append(deleteFloors, finalized(set, deletes(deleteFloorLabel(due), set)))
	}
	del, nr := median(dels), median(noReclaims)
	wf, wf2, df := median(floors), median(floors2), median(deleteFloors)
	s.rows = append(s.rows, del, nr, wf, wf2, df)
	s.step("DELETE sweeps %s, with --reclaim=false %s, write floors (claim, delete, deactivate) %s, (claim, delete) %s, delete floors %s: medians %s, %s, %s, %s and %s",
		walls(dels), walls(noReclaims), walls(floors), walls(floors2), walls(deleteFloors),
		del.Wall.Round(time.Millisecond), nr.Wall.Round(time.Millisecond), wf.Wall.Round(time.Millisecond),
		wf2.Wall.Round(time.Millisecond), df.Wall.Round(time.Millisecond))
	// Diagnostic: the same sweep without client-side throttling, to tell
	// nsman's default --qps and --burst from the rest of its cost.
	fast := finalized(setDueUnthrottled, s.sweepRow(unthrottledLabel(due), "-l", only(seeded(setDueUnthrottled)), "--qps", "100000", "--burst", "100000"))
	if got := fast.States[report.StateFired]; got != due {
		t.Errorf("N=%d: unthrottled DELETE sweep fired %d, want %d (%v)", n, got, due, fast.States)
	}
	// The same DELETE sweep split among 2 and 4 shards run side by side.
	for _, shards := range shardCounts {
		set := seeded(fmt.Sprintf("%s%d", setShardedPrefix, shards))
		if _, err := s.audit.next(ctx); err != nil {
			t.Fatal(err)
		}
		runs := make([]sweepRun, shards)
		errs := make([]error, shards)
		var wg sync.WaitGroup
		start := time.Now()
		for i := range shards {
			wg.Go(func() {
				runs[i], errs[i] = runSweep(ctx, []string{bin}, s.env.Kubeconfig, "-l", only(set),
					"--shard-count", strconv.Itoa(shards), "--shard-index", strconv.Itoa(i))
			})
		}
		wg.Wait()
		m := measurement{What: shardsLabel(due, shards), Wall: time.Since(start),
			HTTP: map[string]int{}, States: map[report.State]int{}}
		var per []string
		for i, run := range runs {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			if run.Code != 0 {
				t.Errorf("N=%d shard %d of %d: nsman exited %d; stderr:\n%s", n, i, shards, run.Code, tail(run.Stderr, 4000))
			}
			m.MaxRSS = max(m.MaxRSS, run.MaxRSS)
			for k, v := range run.Summary.Requests {
				m.HTTP[k] += v
			}
			for k, v := range run.Summary.States {
				m.States[k] += v
			}
			per = append(per, fmt.Sprintf("%d fired in %.2f s", run.Summary.States[report.StateFired], run.Wall.Seconds()))
		}
		m.Note = "shards: " + strings.Join(per, "; ")
		if got := m.States[report.StateFired]; got != due {
			t.Errorf("N=%d, %d shards: fired %d, want %d (%v)", n, shards, got, due, m.States)
		}
		if got := m.States[report.StateWaiting]; got != n {
			t.Errorf("N=%d, %d shards: %d waiting, want each of the %d background managers once (%v)", n, shards, got, n, m.States)
		}
		s.record(finalized(set, m))
	}

	return s.rows, s.version
}

// median is the measurement of median wall time; its note lists them all.
func median(ms []measurement) measurement {
	sorted := slices.SortedFunc(slices.Values(ms), func(a, b measurement) int { return cmp.Compare(a.Wall, b.Wall) })
	m := sorted[len(sorted)/2]
	m.Note = strings.TrimPrefix(m.Note+"; median of "+walls(ms), "; ")
	m.Runs = nil
	for _, r := range ms {
		m.PeakRSS = max(m.PeakRSS, r.MaxRSS)
		m.Runs = append(m.Runs, r.Wall)
	}
	return m
}

// walls lists the wall times of ms, in the order run.
func walls(ms []measurement) string {
	var ws []string
	for _, m := range ms {
		ws = append(ws, fmt.Sprintf("%.2f", m.Wall.Seconds()))
	}
	return strings.Join(ws, ", ") + " s"
}
