package bench

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nsman/nsman/sweep"
	"github.com/nsman/nsman/test/nsmantest"
)

// Command is how BENCHMARKS.md says to reproduce it.
const Command = "make bench"

// analysisMarker separates the generated part of BENCHMARKS.md from the
// hand-written analysis below it, which a new run keeps.
const analysisMarker = "<!-- end of generated results; hand-written analysis below is kept by make bench -->"

// TestBenchmarks seeds N managers for each size in NSMAN_BENCH_SIZES
// (default 1000,10000), each in a fresh API-tier control plane, then one
// rule over as many namespaces as the largest size, in another, measures the
// floors and nsman sweeps, prints the tables and writes BENCHMARKS.md
// (NSMAN_BENCH_OUT to write elsewhere). NSMAN_BENCH_UNIT names a file of Go
// benchmark output to include. NSMAN_BENCH_ONLY=managers or =rules runs one
// part alone (with NSMAN_BENCH_OUT: the document then lacks the other).
func TestBenchmarks(t *testing.T) {
	if os.Getenv("NSMAN_BENCH") != "1" {
		t.Skip("control-plane benchmarks run with NSMAN_BENCH=1 (make bench)")
	}
	sizes, err := parseSizes(os.Getenv("NSMAN_BENCH_SIZES"))
	if err != nil {
		t.Fatal(err)
	}
	only := os.Getenv("NSMAN_BENCH_ONLY")
	if only != "" && only != "managers" && only != "rules" {
		t.Fatalf("NSMAN_BENCH_ONLY=%q: want managers or rules", only)
	}
	due := 1000
	if v := os.Getenv("NSMAN_BENCH_DUE"); v != "" {
		if due, err = strconv.Atoi(v); err != nil || due < 1 {
			t.Fatalf("NSMAN_BENCH_DUE=%q: want a positive number", v)
		}
	}
	bin := filepath.Join(t.TempDir(), "nsman")
	build := exec.Command("go", "build", "-o", bin, "./cmd/nsman")
	build.Dir = nsmantest.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/nsman: %v\n%s", err, out)
	}

	began := time.Now()
	var rows, ruleRows []measurement
	var kubeVersion string
	var measured []int // the sizes of the managers' part
	if only != "rules" {
		measured = sizes
		for _, n := range sizes {
			r, v := measureSize(t, bin, n, due)
			rows = append(rows, r...)
			kubeVersion = v
		}
	}
	if only != "managers" {
		ruleRows, kubeVersion = measureRules(t, bin, slices.Max(sizes), due)
	}
	doc := render(rows, ruleRows, measured, due, kubeVersion, began)
	fmt.Println(doc)
	out := os.Getenv("NSMAN_BENCH_OUT")
	if out == "" {
		out = filepath.Join(nsmantest.RepoRoot(), "BENCHMARKS.md")
	}
	if old, err := os.ReadFile(out); err == nil {
		if _, analysis, ok := strings.Cut(string(old), analysisMarker); ok {
			doc += analysis
		}
	}
	if err := os.WriteFile(out, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", out)
}

func parseSizes(s string) ([]int, error) {
	if s == "" {
		return []int{1000, 10000}, nil
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

// measureSize starts a control plane, seeds n background managers and
// measures, in order: the read floor, the read floor with the pods checks,
// nsman's first sweep (which records status on every manager), a no-op
// sweep, then, with due more managers due for DELETE and as many again for
// each write floor, nsman's DELETE sweep and the write floors.
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
	s.readRows("floor + pods checks (16 workers)", func() (string, error) {
		return fmt.Sprintf("%d pods checks", len(podsNamespaces)), floorPodsChecks(ctx, s.sa, podsNamespaces)
	})
	// Diagnostic: the same sweep at Go's default GC target, to show what
	// nsman's own (cmd.SetGCPercent) saves.
	s.rows = append(s.rows, s.measureCommand([]string{"env", "GOGC=100", bin}, "diagnostic: GOGC=100 (Go's default), nsman sweep, no-op"))

	// (c) due managers due for DELETE, each in the namespace it deletes,
	// and as many for each write floor, in deleteRounds interleaved runs:
	// one run of each on a shared 2-core machine varies by a third, so the
	// rows are the medians.
	began = time.Now()
	dueKind := func(int) kind { return ttlDue }
	roundSets := []string{setDue, setWriteFloor, setWriteFloor2}
	for r := range deleteRounds {
		for _, set := range roundSets {
			if err := s.seed.seed(ctx, fmt.Sprintf("%s%d", set, r), fmt.Sprintf("%s%d", set, r), due, dueKind); err != nil {
				t.Fatalf("seed %s: %v", set, err)
			}
		}
	}
	if err := s.seed.seed(ctx, "unthrottled", setDueUnthrottled, due, dueKind); err != nil {
		t.Fatalf("seed due (unthrottled): %v", err)
	}
	s.step("seeded %d×%d due managers in %s", len(roundSets)*deleteRounds+1, due, time.Since(began).Round(time.Millisecond))
	only := func(set string) string { return setLabel + " in (" + setBackground + "," + set + ")" }
	// writes measures the write floor which over set.
	writes := func(what, set string, which writeKind) measurement {
		targets, err := prepareWriteFloor(ctx, s.sa, set)
		if err != nil {
			t.Fatal(err)
		}
		if len(targets) != due {
			t.Fatalf("%s: %d managers listed, want %d", what, len(targets), due)
		}
		start := time.Now()
		if err := writeFloor(ctx, s.sa, targets, which); err != nil {
			t.Fatal(err)
		}
		return s.measured(measurement{What: what, Wall: time.Since(start)})
	}
	var dels, floors, floors2 []measurement
	for r := range deleteRounds {
		if _, err := s.audit.next(ctx); err != nil {
			t.Fatal(err)
		}
		m := s.measureSweep(deleteSweepLabel(due), "-l", only(fmt.Sprintf("%s%d", setDue, r)))
		if got := m.States[sweep.StateFired]; got != due {
			t.Errorf("N=%d: DELETE sweep %d fired %d, want %d (%v)", n, r, got, due, m.States)
		}
		dels = append(dels, m)
		floors = append(floors, writes(writeFloorLabel(due), fmt.Sprintf("%s%d", setWriteFloor, r), claimDeleteDeactivate))
		floors2 = append(floors2, writes(writeFloor2Label(due), fmt.Sprintf("%s%d", setWriteFloor2, r), claimDelete))
	}
	del, wf, wf2 := median(dels), median(floors), median(floors2)
	s.rows = append(s.rows, del, wf, wf2)
	s.step("DELETE sweeps %s, write floors (claim, delete, deactivate) %s, write floors (claim, delete) %s: medians %s, %s and %s",
		walls(dels), walls(floors), walls(floors2),
		del.Wall.Round(time.Millisecond), wf.Wall.Round(time.Millisecond), wf2.Wall.Round(time.Millisecond))
	// Diagnostic: the same sweep without client-side throttling, to tell
	// nsman's default --qps 500 --burst 1000 from the rest of its cost.
	fast := s.sweepRow(fmt.Sprintf("diagnostic: nsman sweep, %d due for DELETE, --qps 100000 --burst 100000", due),
		"-l", only(setDueUnthrottled), "--qps", "100000", "--burst", "100000")
	if got := fast.States[sweep.StateFired]; got != due {
		t.Errorf("N=%d: unthrottled DELETE sweep fired %d, want %d (%v)", n, got, due, fast.States)
	}
	// The same DELETE sweep split among 2 and 4 shards run side by side.
	for _, shards := range shardCounts {
		set := fmt.Sprintf("%s%d", setShardedPrefix, shards)
		began := time.Now()
		if err := s.seed.seed(ctx, fmt.Sprintf("shards%d", shards), set, due, dueKind); err != nil {
			t.Fatalf("seed %s: %v", set, err)
		}
		s.step("seeded %d due managers for %d shards in %s", due, shards, time.Since(began).Round(time.Millisecond))
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
		m := measurement{What: fmt.Sprintf("nsman, %d due for DELETE, %d shards side by side", due, shards), Wall: time.Since(start),
			HTTP: map[string]int{}, States: map[sweep.State]int{}}
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
			per = append(per, fmt.Sprintf("%d fired in %.2f s", run.Summary.States[sweep.StateFired], run.Wall.Seconds()))
		}
		m.Note = "shards: " + strings.Join(per, "; ")
		if got := m.States[sweep.StateFired]; got != due {
			t.Errorf("N=%d, %d shards: fired %d, want %d (%v)", n, shards, got, due, m.States)
		}
		if got := m.States[sweep.StateWaiting]; got != n {
			t.Errorf("N=%d, %d shards: %d waiting, want each of the %d background managers once (%v)", n, shards, got, n, m.States)
		}
		s.record(m)
	}

	return s.rows, s.version
}

// deleteRounds is how many times the DELETE sweep and the write floors
// are measured, interleaved.
const deleteRounds = 3

// The labels of the DELETE sweep and the write floors, by which render
// finds their rows.
func deleteSweepLabel(due int) string { return fmt.Sprintf("nsman sweep, %d due for DELETE", due) }

func writeFloorLabel(due int) string {
	return fmt.Sprintf("write floor: %d × (claim, delete, deactivate), %d workers", due, floorConcurrency)
}

func writeFloor2Label(due int) string {
	return fmt.Sprintf("write floor: %d × (claim, delete), %d workers", due, floorConcurrency)
}

// median is the measurement of median wall time; its note lists them all.
func median(ms []measurement) measurement {
	sorted := slices.SortedFunc(slices.Values(ms), func(a, b measurement) int { return cmp.Compare(a.Wall, b.Wall) })
	m := sorted[len(sorted)/2]
	m.Note = strings.TrimPrefix(m.Note+"; median of "+walls(ms), "; ")
	for _, r := range ms {
		m.PeakRSS = max(m.PeakRSS, r.MaxRSS)
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

// render writes the Markdown report: rows of the managers' part for each
// of sizes, and rules, the rows of the rules' part.
func render(rows, rules []measurement, sizes []int, due int, kubeVersion string, began time.Time) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# nsman benchmarks\n\n")
	p("Generated by `%s` (the control-plane part alone: `NSMAN_BENCH=1 go test -count=1 -run TestBenchmarks -timeout 60m -v ./test/bench/`,\n", Command)
	p("sizes with `NSMAN_BENCH_SIZES=1000,10000`) on %s.\n\n", began.UTC().Format("2006-01-02 15:04 MST"))
	p("Machine: %d CPUs (`nproc`, %s), %s memory, %s/%s; %s; kube-apiserver %s (API tier of test/cluster: etcd + kube-apiserver, audit log on, blocking).\n\n",
		runtime.NumCPU(), cpuModel(), memTotal(), runtime.GOOS, runtime.GOARCH, runtime.Version(), kubeVersion)
	p("Each size runs in a fresh control plane. Seeded: N managers, each in its own namespace and targeting it; half TTL 24 h (not due),\n")
	p("half PODS_SUCCEED (initialDelaySeconds 0) with one Running pod, so every sweep checks their pods and keeps waiting.\n")
	p("Then, %d times over, %d more managers due for DELETE (TTL 0), each in the namespace it deletes: %d for nsman and %d for each\n", deleteRounds, due, due, due)
	p("write floor, measured in turn (the rows are the median runs; the notes list every run). Per manager, the write floor (claim,\n")
	p("delete, deactivate) makes the claim (a merge patch of the status subresource, conditional on the listed resourceVersion,\n")
	p("setting `status.claim` alone), the namespace delete (UID precondition, background propagation) and the `spec.deactivated`\n")
	p("merge patch; the write floor (claim, delete) makes the same claim and delete alone, exactly what nsman writes for a manager\n")
	p("deleting its own namespace (no Event, record or deactivation: the manager goes with its namespace). nsman is the built binary, run as a child\n")
	p("process as its ServiceAccount (deploy/base/rbac.yaml) with default flags (`--concurrency 16 --qps 500 --burst 1000`) and its own\n")
	p("GC target (GOGC 50 unless the environment sets GOGC; a diagnostic row shows Go's default of 100); the floors are\n")
	p("minimal client-go code in the driver, as the same ServiceAccount, unthrottled (QPS -1), page size %d as nsman. The read floor\n", pageSize)
	p("runs after nsman's first sweep, so that it lists the same objects as the no-op sweep: managers with their status. The read\n")
	p("floors and the no-op sweep are measured %d times, interleaved, and the rows are the median runs, as for the writes.\n", readRounds)
	p("Requests are the API server's audit log for the ServiceAccount (verb resource); nsman's own count by HTTP method\n")
	p("(`summary.requests`) also shows its discovery request. nsman runs through a small launcher process (test/bench/launch_test.go)\n")
	p("that times it and reads its rusage: wall time includes starting the process, and peak RSS is nsman's own maxrss (a child\n")
	p("started by the driver itself would report the driver's peak; a figure near %d MiB would be the launcher's own). The floors run in\n", launcherRSSMiB)
	p("the driver's process. \"load avg after\" is the 1-minute load average when the row was measured: the machine is shared, and a\n")
	p("load above the CPU count means other work competed for it.\n\n")

	if len(rows) > 0 {
		table(&b, rows, "managers")
	}
	if len(rules) > 0 {
		n := rules[0].N
		p("\n## One rule over %d namespaces (issue 13)\n\n", n)
		p("A fresh control plane of its own. Seeded: %d namespaces labelled `%s=on`, each with one `app=e2e` pod, and one\n", n, ruleLabel)
		p("rule, `%s/%s`, in its own namespace (nsman runs with `--trusted-namespaces %s`), whose `namespaceSelector` selects\n", rulesNamespace, ruleName, rulesNamespace)
		p("them, with two policies in order: `TTL` 86400 s → DELETE, then `PODS_SUCCEED` (initialDelaySeconds 0, podLabels `app: e2e`)\n")
		p("→ DELETE. A rule applies the same policies to every namespace, and a namespace with no matching pod passes PODS_SUCCEED; so,\n")
		p("to keep every namespace waiting, half the namespaces hold a Running `app=e2e` pod (as the managers' part seeds them) and the\n")
		p("other half an `app=e2e` pod left Pending (created, never started). The \"TTL half\" are the namespaces whose pod never started:\n")
		p("PODS_SUCCEED waits on both halves, and TTL decides nothing before a day. The read floor lists the same objects as the no-op\n")
		p("sweep (the one rule and every namespace, paged), after nsman's first sweep; the next row adds the paged list (metadata\n")
		p("only) of every pod that has not succeeded, which nsman lists once for a rule with more than %d namespaces to check (beside\n", sweep.PodIndexAfter)
		p("the namespaces when the rule's status says it matched that many at the last sweep). Then, %d times over, %d of\n", deleteRounds, due)
		p("the namespaces with a Running pod are made due by setting their pod's phase to Succeeded (the end of a test run), and nsman\n")
		p("sweeps: per namespace, a merge patch of the namespace conditional on its listed resourceVersion that sets the annotation\n")
		p("`%s<rule UID>` to the claim, then the namespace delete (UID precondition, background propagation); per\n", sweep.PairAnnotationPrefix)
		p("sweep, one Event on the rule and its status summary; before acting on up to %d namespaces, nsman reads again that their\n", sweep.PairChunk)
		p("pods succeeded, with one paged list of the `app=e2e` pods that have not succeeded and one of Jobs (counted first, with one\n")
		p("request per sweep). In turn, the write floor makes those\n")
		p("two writes per namespace (a claim of\n")
		p("the same shape) on %d other namespaces seeded for it (labelled `%s=off`, each with a Succeeded pod), with %d workers,\n", due, ruleLabel, floorConcurrency)
		p("unthrottled, as the ServiceAccount. The rows are the median runs; the notes list every run. Each sweep handles the namespaces\n")
		p("the rule still matches: those deleted in earlier rounds are terminating, which no rule matches.\n\n")
		table(&b, rules, "pairs")
	}

	p("\n## Targets (issues 6, 12 and 13)\n\n")
	p("| N | target | measured | met |\n|---:|---|---|---|\n")
	met := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "**no**"
	}
	// The issues set the no-op targets at 10,000; below, the fixed costs
	// (process start, discovery, the first 100 pods checks) weigh more
	// than the lists.
	atScale := func(n int, ok bool) string {
		if n < 10000 {
			return "– (set at 10,000)"
		}
		return met(ok)
	}
	// noopTargets writes the targets of a no-op sweep, named with prefix:
	// its time against the read floor (and against the floor with the pods
	// reads plus made, for comparison) and zero writes.
	noopTargets := func(n int, prefix string, noop, floor, plus measurement, plusWhat string) {
		ratio := noop.Wall.Seconds() / floor.Wall.Seconds()
		p("| %d | %sno-op sweep ≤ 1.3 × read floor | %.2f s / %.2f s = %.1f× (floor incl. %s: %.2f s, %.1f×) | %s |\n",
			n, prefix, noop.Wall.Seconds(), floor.Wall.Seconds(), ratio, plusWhat, plus.Wall.Seconds(), noop.Wall.Seconds()/plus.Wall.Seconds(), atScale(n, ratio <= 1.3))
		p("| %d | %szero writes in a no-op sweep | %d | %s |\n", n, prefix, noop.writes(), met(noop.writes() == 0))
	}
	// rssTarget writes the target of peak RSS over every sweep of rows.
	rssTarget := func(rows []measurement, n int, prefix string, noop, del measurement) {
		rss := float64(peakRSS(rows, n)) / 1024
		p("| %d | %speak RSS ≤ 64 MiB, over every nsman sweep | %.1f MiB (no-op sweep %.1f MiB, DELETE sweeps up to %.1f MiB) | %s |\n",
			n, prefix, rss, float64(noop.MaxRSS)/1024, float64(del.PeakRSS)/1024, met(rss <= 64))
	}
	for _, n := range sizes {
		floor, _ := find(rows, n, "floor: ")
		floorPods, _ := find(rows, n, "floor + pods")
		noop, _ := find(rows, n, "nsman sweep, no-op")
		del, _ := find(rows, n, deleteSweepLabel(due))
		wf, _ := find(rows, n, writeFloorLabel(due))
		wf2, _ := find(rows, n, writeFloor2Label(due))
		fast, _ := find(rows, n, "diagnostic: nsman sweep")
		noopTargets(n, "", noop, floor, floorPods, "pods checks")
		pages := floor.total()
		checks := floorPods.count("list", "pods")
		p("| %d | requests ≤ list pages + pods checks | %d audited (+%d discovery) vs %d pages + %d checks = %d | %s |\n",
			n, noop.total(), httpTotal(noop.HTTP)-noop.total(), pages, checks, pages+checks, met(noop.total() <= pages+checks))
		rssTarget(rows, n, "", noop, del)
		dr := del.Wall.Seconds() / wf.Wall.Seconds()
		p("| %d | %d DELETEs ≤ 2.5 × write floor (claim, delete, deactivate) and ≤ 10 s | %.2f s / %.2f s = %.1f× (sweep minus no-op sweep: %.2f s, %.1f×; unthrottled diagnostic: %.2f s, %.1f×) | %s |\n",
			n, due, del.Wall.Seconds(), wf.Wall.Seconds(), dr, (del.Wall - noop.Wall).Seconds(), (del.Wall-noop.Wall).Seconds()/wf.Wall.Seconds(),
			fast.Wall.Seconds(), fast.Wall.Seconds()/wf.Wall.Seconds(), met(dr <= 2.5 && del.Wall <= 10*time.Second))
		dr2 := del.Wall.Seconds() / wf2.Wall.Seconds()
		p("| %d | %d DELETEs of their own namespace ≤ 1.3 × (claim, delete) floor | %.2f s / %.2f s = %.2f× (sweep minus no-op sweep: %.2f s, %.2f×) | %s |\n",
			n, due, del.Wall.Seconds(), wf2.Wall.Seconds(), dr2, (del.Wall - noop.Wall).Seconds(), (del.Wall-noop.Wall).Seconds()/wf2.Wall.Seconds(), met(dr2 <= 1.3))
	}
	if len(rules) > 0 {
		n := rules[0].N
		floor, _ := find(rules, n, "floor: ")
		noop, _ := find(rules, n, "nsman sweep, no-op")
		del, _ := find(rules, n, deleteSweepLabel(due))
		wf, _ := find(rules, n, ruleWriteFloorLabel(due))
		floorPods, _ := find(rules, n, "floor + paged LIST of pods")
		noopTargets(n, "rule: ", noop, floor, floorPods, "the pods list")
		rssTarget(rules, n, "rule: ", noop, del)
		dr := del.Wall.Seconds() / wf.Wall.Seconds()
		p("| %d | rule: %d DELETEs ≤ 2.5 × write floor (annotate, delete) | %.2f s / %.2f s = %.1f× (sweep minus no-op sweep: %.2f s, %.1f×) | %s |\n",
			n, due, del.Wall.Seconds(), wf.Wall.Seconds(), dr, (del.Wall - noop.Wall).Seconds(), (del.Wall-noop.Wall).Seconds()/wf.Wall.Seconds(), met(dr <= 2.5))
	}
	if len(sizes) > 1 {
		lo, hi := sizes[0], sizes[len(sizes)-1]
		p("\n### Growth from %d to %d managers (%.0f× the managers)\n\n", lo, hi, float64(hi)/float64(lo))
		p("| measurement | wall at %d | wall at %d | growth | per manager at %d | per manager at %d |\n|---|---:|---:|---:|---:|---:|\n", lo, hi, lo, hi)
		for _, prefix := range []string{"floor: ", "floor + pods", "nsman sweep, first", "nsman sweep, no-op", "nsman sweep, " + strconv.Itoa(due)} {
			a, _ := find(rows, lo, prefix)
			z, _ := find(rows, hi, prefix)
			p("| %s | %.2f s | %.2f s | %.1f× | %.0f µs | %.0f µs |\n", a.What, a.Wall.Seconds(), z.Wall.Seconds(), z.Wall.Seconds()/a.Wall.Seconds(),
				float64(a.Wall.Microseconds())/float64(lo), float64(z.Wall.Microseconds())/float64(hi))
		}
		a, _ := find(rows, lo, "nsman sweep, no-op")
		z, _ := find(rows, hi, "nsman sweep, no-op")
		p("\nPeak RSS of the no-op sweep: %.1f MiB at %d, %.1f MiB at %d. Requests: %d at %d, %d at %d.\n",
			float64(a.MaxRSS)/1024, lo, float64(z.MaxRSS)/1024, hi, a.total(), lo, z.total(), hi)
	}
	if len(sizes) > 0 {
		p("\n### Sharding: %d due DELETEs among shards run side by side\n\n", due)
		p("Every shard lists every manager and handles those whose UID hashes to it; each shard's sweep is a process of its own.\n\n")
		p("| N | shards | wall | speed-up | requests | writes | peak RSS of a shard | fired per shard |\n|---:|---:|---:|---:|---:|---:|---:|---|\n")
		for _, n := range sizes {
			one, _ := find(rows, n, "nsman sweep, "+strconv.Itoa(due))
			p("| %d | 1 | %.2f s | 1.0× | %d | %d | %.1f MiB | %d |\n", n, one.Wall.Seconds(), one.total(), one.writes(), float64(one.MaxRSS)/1024, one.States[sweep.StateFired])
			for _, shards := range shardCounts {
				m, ok := find(rows, n, fmt.Sprintf("nsman, %d due for DELETE, %d shards", due, shards))
				if !ok {
					continue
				}
				p("| %d | %d | %.2f s | %.1f× | %d | %d | %.1f MiB | %s |\n", n, shards, m.Wall.Seconds(), one.Wall.Seconds()/m.Wall.Seconds(),
					m.total(), m.writes(), float64(m.MaxRSS)/1024, strings.TrimPrefix(m.Note, "shards: "))
			}
		}
	}
	if unit := os.Getenv("NSMAN_BENCH_UNIT"); unit != "" {
		if data, err := os.ReadFile(unit); err == nil {
			p("\n## Go benchmarks (10,000 managers per op)\n\n```\n%s```\n", data)
		}
	}
	p("\n%s\n", analysisMarker)
	return b.String()
}

// find is the first row of size n whose label starts with prefix.
func find(rows []measurement, n int, prefix string) (measurement, bool) {
	for _, m := range rows {
		if m.N == n && strings.HasPrefix(m.What, prefix) {
			return m, true
		}
	}
	return measurement{}, false
}

// peakRSS is the highest peak RSS of nsman among the rows of size n: every
// sweep of nsman as shipped counts, each run of the DELETE sweep included;
// the GOGC=100 diagnostic does not.
func peakRSS(rows []measurement, n int) int64 {
	var peak int64
	for _, m := range rows {
		if m.N == n && !strings.HasPrefix(m.What, "diagnostic: GOGC") {
			peak = max(peak, m.MaxRSS, m.PeakRSS)
		}
	}
	return peak
}

// table writes rows as a Markdown table; counted names what the sweeps'
// states count (managers, pairs).
func table(b *strings.Builder, rows []measurement, counted string) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("| N | measurement | wall | requests | writes | requests by verb | nsman summary.requests | peak RSS | %s by state / note | load avg after |\n", counted)
	p("|---:|---|---:|---:|---:|---|---|---:|---|---:|\n")
	for _, m := range rows {
		rss := "–"
		if m.MaxRSS > 0 {
			rss = fmt.Sprintf("%.1f MiB", float64(m.MaxRSS)/1024)
		}
		note := m.Note
		if m.States != nil {
			parts := map[string]int{}
			for k, v := range m.States {
				parts[string(k)] = v
			}
			note = strings.TrimSuffix(describe(parts)+"; "+m.Note, "; ")
		}
		http := "–"
		if m.HTTP != nil {
			http = describe(m.HTTP)
		}
		p("| %d | %s | %.2f s | %d | %d | %s | %s | %s | %s | %s |\n", m.N, m.What, m.Wall.Seconds(), m.total(), m.writes(), describe(m.Audited), http, rss, note, m.Load)
	}
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
