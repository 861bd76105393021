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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nsman/nsman/sweep"
	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

// Command is how BENCHMARKS.md says to reproduce it.
const Command = "make bench"

// analysisMarker separates the generated part of BENCHMARKS.md from the
// hand-written analysis below it, which a new run keeps.
const analysisMarker = "<!-- end of generated results; hand-written analysis below is kept by make bench -->"

// TestBenchmarks seeds N managers for each size in NSMAN_BENCH_SIZES
// (default 1000,10000), each in a fresh API-tier control plane, measures the
// floors and nsman sweeps, prints the table and writes BENCHMARKS.md
// (NSMAN_BENCH_OUT to write elsewhere). NSMAN_BENCH_UNIT names a file of Go
// benchmark output to include.
func TestBenchmarks(t *testing.T) {
	if os.Getenv("NSMAN_BENCH") != "1" {
		t.Skip("control-plane benchmarks run with NSMAN_BENCH=1 (make bench)")
	}
	sizes, err := parseSizes(os.Getenv("NSMAN_BENCH_SIZES"))
	if err != nil {
		t.Fatal(err)
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
	var rows []measurement
	var kubeVersion string
	for _, n := range sizes {
		r, v := measureSize(t, bin, n, due)
		rows = append(rows, r...)
		kubeVersion = v
	}
	doc := render(rows, sizes, due, kubeVersion, began)
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
	step := func(format string, args ...any) {
		t.Logf("N=%d: %s", n, fmt.Sprintf(format, args...))
	}

	c, err := cluster.Start(ctx, cluster.Options{Tier: cluster.APITier})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	crd := nsmantest.CRD(t)
	env, err := nsmantest.Setup(ctx, c, crd)
	if err != nil {
		t.Fatal(err)
	}
	version, err := c.Admin.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sa, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	sa.QPS = -1 // the floor is never throttled on the client side

	seed := seeder{kube: c.Admin, dyn: env.Dynamic}
	began := time.Now()
	kindOf := func(i int) kind {
		if i%2 == 0 {
			return ttlNotDue
		}
		return podsRunning
	}
	if err := seed.seed(ctx, "bench", setBackground, n, kindOf); err != nil {
		t.Fatalf("seed: %v", err)
	}
	step("seeded %d managers in %s", n, time.Since(began).Round(time.Millisecond))
	var podsNamespaces []string
	for i := range n {
		if kindOf(i) == podsRunning {
			podsNamespaces = append(podsNamespaces, fmt.Sprintf("bench-%05d", i))
		}
	}

	audit := &auditCursor{c: c, user: env.User}
	if _, err := audit.next(ctx); err != nil {
		t.Fatal(err)
	}
	var rows []measurement
	// measured completes m with the requests audited since the last
	// measurement and the load now.
	measured := func(m measurement) measurement {
		m.N = n
		m.Load = loadAverage()
		if m.Audited, err = audit.next(ctx); err != nil {
			t.Fatal(err)
		}
		step("%s: %s, %d requests (%s), RSS %d KiB", m.What, m.Wall.Round(time.Millisecond), m.total(), describe(m.Audited), m.MaxRSS)
		return m
	}
	record := func(m measurement) measurement {
		m = measured(m)
		rows = append(rows, m)
		return m
	}
	// measureCommand runs a sweep through command: nsman's binary, or env
	// setting a variable first.
	measureCommand := func(command []string, what string, args ...string) measurement {
		run, err := runSweep(ctx, command, env.Kubeconfig, args...)
		if err != nil {
			t.Fatal(err)
		}
		if run.Code != 0 {
			t.Errorf("N=%d %s: nsman exited %d; stderr:\n%s", n, what, run.Code, tail(run.Stderr, 4000))
		}
		return measured(measurement{What: what, Wall: run.Wall, HTTP: run.Summary.Requests, MaxRSS: run.MaxRSS, States: run.Summary.States})
	}
	measureSweep := func(what string, args ...string) measurement {
		return measureCommand([]string{bin}, what, args...)
	}
	sweepRow := func(what string, args ...string) measurement {
		m := measureSweep(what, args...)
		rows = append(rows, m)
		return m
	}

	// (b) The first sweep records a status on every manager; the next one
	// changes nothing and must write nothing.
	sweepRow("nsman sweep, first (records status)")

	// (a) The read floor, over the same objects as the no-op sweep: with
	// the status the first sweep recorded, a manager is about twice as
	// large as when seeded.
	start := time.Now()
	managers, namespaces, err := floorLists(ctx, sa)
	if err != nil {
		t.Fatal(err)
	}
	record(measurement{What: "floor: paged LIST of managers + namespaces", Wall: time.Since(start),
		Note: fmt.Sprintf("%d managers, %d namespaces", managers, namespaces)})
	start = time.Now()
	if _, _, err := floorLists(ctx, sa); err != nil {
		t.Fatal(err)
	}
	if err := floorPodsChecks(ctx, sa, podsNamespaces); err != nil {
		t.Fatal(err)
	}
	record(measurement{What: "floor + pods checks (16 workers)", Wall: time.Since(start),
		Note: fmt.Sprintf("%d pods checks", len(podsNamespaces))})

	noop := sweepRow("nsman sweep, no-op (nothing due)")
	if w := noop.writes(); w != 0 {
		t.Errorf("N=%d: the no-op sweep made %d write requests: %s", n, w, describe(noop.Audited))
	}
	if got := noop.States[sweep.StateWaiting]; got != n {
		t.Errorf("N=%d: no-op sweep: %d managers waiting, want %d (%v)", n, got, n, noop.States)
	}
	// Diagnostic: the same sweep at Go's default GC target, to show what
	// nsman's own (cmd.SetGCPercent) saves.
	rows = append(rows, measureCommand([]string{"env", "GOGC=100", bin}, "diagnostic: GOGC=100 (Go's default), nsman sweep, no-op"))

	// (c) due managers due for DELETE, each in the namespace it deletes,
	// and as many for each write floor, in deleteRounds interleaved runs:
	// one run of each on a shared 2-core machine varies by a third, so the
	// rows are the medians.
	began = time.Now()
	dueKind := func(int) kind { return ttlDue }
	roundSets := []string{setDue, setWriteFloor, setWriteFloor2}
	for r := range deleteRounds {
		for _, set := range roundSets {
			if err := seed.seed(ctx, fmt.Sprintf("%s%d", set, r), fmt.Sprintf("%s%d", set, r), due, dueKind); err != nil {
				t.Fatalf("seed %s: %v", set, err)
			}
		}
	}
	if err := seed.seed(ctx, "unthrottled", setDueUnthrottled, due, dueKind); err != nil {
		t.Fatalf("seed due (unthrottled): %v", err)
	}
	step("seeded %d×%d due managers in %s", len(roundSets)*deleteRounds+1, due, time.Since(began).Round(time.Millisecond))
	only := func(set string) string { return setLabel + " in (" + setBackground + "," + set + ")" }
	// writes measures the write floor which over set.
	writes := func(what, set string, which writeKind) measurement {
		targets, err := prepareWriteFloor(ctx, sa, set)
		if err != nil {
			t.Fatal(err)
		}
		if len(targets) != due {
			t.Fatalf("%s: %d managers listed, want %d", what, len(targets), due)
		}
		start := time.Now()
		if err := writeFloor(ctx, sa, targets, which); err != nil {
			t.Fatal(err)
		}
		return measured(measurement{What: what, Wall: time.Since(start)})
	}
	var dels, floors, floors2 []measurement
	for r := range deleteRounds {
		if _, err := audit.next(ctx); err != nil {
			t.Fatal(err)
		}
		m := measureSweep(deleteSweepLabel(due), "-l", only(fmt.Sprintf("%s%d", setDue, r)))
		if got := m.States[sweep.StateFired]; got != due {
			t.Errorf("N=%d: DELETE sweep %d fired %d, want %d (%v)", n, r, got, due, m.States)
		}
		dels = append(dels, m)
		floors = append(floors, writes(writeFloorLabel(due), fmt.Sprintf("%s%d", setWriteFloor, r), claimDeleteDeactivate))
		floors2 = append(floors2, writes(writeFloor2Label(due), fmt.Sprintf("%s%d", setWriteFloor2, r), claimDelete))
	}
	del, wf, wf2 := median(dels), median(floors), median(floors2)
	rows = append(rows, del, wf, wf2)
	step("DELETE sweeps %s, write floors (claim, delete, deactivate) %s, write floors (claim, delete) %s: medians %s, %s and %s",
		walls(dels), walls(floors), walls(floors2),
		del.Wall.Round(time.Millisecond), wf.Wall.Round(time.Millisecond), wf2.Wall.Round(time.Millisecond))
	// Diagnostic: the same sweep without client-side throttling, to tell
	// nsman's default --qps 500 --burst 1000 from the rest of its cost.
	fast := sweepRow(fmt.Sprintf("diagnostic: nsman sweep, %d due for DELETE, --qps 100000 --burst 100000", due),
		"-l", only(setDueUnthrottled), "--qps", "100000", "--burst", "100000")
	if got := fast.States[sweep.StateFired]; got != due {
		t.Errorf("N=%d: unthrottled DELETE sweep fired %d, want %d (%v)", n, got, due, fast.States)
	}
	// The same DELETE sweep split among 2 and 4 shards run side by side.
	for _, shards := range shardCounts {
		set := fmt.Sprintf("%s%d", setShardedPrefix, shards)
		began := time.Now()
		if err := seed.seed(ctx, fmt.Sprintf("shards%d", shards), set, due, dueKind); err != nil {
			t.Fatalf("seed %s: %v", set, err)
		}
		step("seeded %d due managers for %d shards in %s", due, shards, time.Since(began).Round(time.Millisecond))
		if _, err := audit.next(ctx); err != nil {
			t.Fatal(err)
		}
		runs := make([]sweepRun, shards)
		errs := make([]error, shards)
		var wg sync.WaitGroup
		start := time.Now()
		for i := range shards {
			wg.Go(func() {
				runs[i], errs[i] = runSweep(ctx, []string{bin}, env.Kubeconfig, "-l", only(set),
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
		record(m)
	}

	return rows, version.GitVersion
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
	m.Note = strings.TrimSpace(m.Note + " median of " + walls(ms))
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

// render writes the Markdown report.
func render(rows []measurement, sizes []int, due int, kubeVersion string, began time.Time) string {
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
	p("runs after nsman's first sweep, so that it lists the same objects as the no-op sweep: managers with their status.\n")
	p("Requests are the API server's audit log for the ServiceAccount (verb resource); nsman's own count by HTTP method\n")
	p("(`summary.requests`) also shows its discovery request. nsman runs through a small launcher process (test/bench/launch_test.go)\n")
	p("that times it and reads its rusage: wall time includes starting the process, and peak RSS is nsman's own maxrss (a child\n")
	p("started by the driver itself would report the driver's peak; a figure near %d MiB would be the launcher's own). The floors run in\n", launcherRSSMiB)
	p("the driver's process. \"load avg after\" is the 1-minute load average when the row was measured: the machine is shared, and a\n")
	p("load above the CPU count means other work competed for it.\n\n")

	p("| N | measurement | wall | requests | writes | requests by verb | nsman summary.requests | peak RSS | managers by state / note | load avg after |\n")
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

	p("\n## Targets (issues 6 and 12)\n\n")
	p("| N | target | measured | met |\n|---:|---|---|---|\n")
	find := func(n int, prefix string) (measurement, bool) {
		for _, m := range rows {
			if m.N == n && strings.HasPrefix(m.What, prefix) {
				return m, true
			}
		}
		return measurement{}, false
	}
	met := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "**no**"
	}
	for _, n := range sizes {
		floor, _ := find(n, "floor: ")
		floorPods, _ := find(n, "floor + pods")
		noop, _ := find(n, "nsman sweep, no-op")
		del, _ := find(n, deleteSweepLabel(due))
		wf, _ := find(n, writeFloorLabel(due))
		wf2, _ := find(n, writeFloor2Label(due))
		fast, _ := find(n, "diagnostic: nsman sweep")
		ratio := noop.Wall.Seconds() / floor.Wall.Seconds()
		noopMet := met(ratio <= 1.3)
		if n < 10000 {
			// The issue sets this target at 10,000 managers; below, the
			// fixed costs (process start, discovery, the first 100 pods
			// checks) weigh more than the lists.
			noopMet = "– (set at 10,000)"
		}
		p("| %d | no-op sweep ≤ 1.3 × read floor | %.2f s / %.2f s = %.1f× (floor incl. pods checks: %.2f s, %.1f×) | %s |\n",
			n, noop.Wall.Seconds(), floor.Wall.Seconds(), ratio, floorPods.Wall.Seconds(), noop.Wall.Seconds()/floorPods.Wall.Seconds(), noopMet)
		p("| %d | zero writes in a no-op sweep | %d | %s |\n", n, noop.writes(), met(noop.writes() == 0))
		pages := floor.total()
		checks := floorPods.count("list", "pods")
		p("| %d | requests ≤ list pages + pods checks | %d audited (+%d discovery) vs %d pages + %d checks = %d | %s |\n",
			n, noop.total(), httpTotal(noop.HTTP)-noop.total(), pages, checks, pages+checks, met(noop.total() <= pages+checks))
		// Every sweep of nsman as shipped counts, each run of the DELETE
		// sweep included; the GOGC=100 diagnostic does not.
		var peak int64
		for _, m := range rows {
			if m.N == n && !strings.HasPrefix(m.What, "diagnostic: GOGC") {
				peak = max(peak, m.MaxRSS, m.PeakRSS)
			}
		}
		rss := float64(peak) / 1024
		p("| %d | peak RSS ≤ 64 MiB, over every nsman sweep | %.1f MiB (no-op sweep %.1f MiB, DELETE sweeps up to %.1f MiB) | %s |\n",
			n, rss, float64(noop.MaxRSS)/1024, float64(del.PeakRSS)/1024, met(rss <= 64))
		dr := del.Wall.Seconds() / wf.Wall.Seconds()
		p("| %d | %d DELETEs ≤ 2.5 × write floor (claim, delete, deactivate) and ≤ 10 s | %.2f s / %.2f s = %.1f× (sweep minus no-op sweep: %.2f s, %.1f×; unthrottled diagnostic: %.2f s, %.1f×) | %s |\n",
			n, due, del.Wall.Seconds(), wf.Wall.Seconds(), dr, (del.Wall - noop.Wall).Seconds(), (del.Wall-noop.Wall).Seconds()/wf.Wall.Seconds(),
			fast.Wall.Seconds(), fast.Wall.Seconds()/wf.Wall.Seconds(), met(dr <= 2.5 && del.Wall <= 10*time.Second))
		dr2 := del.Wall.Seconds() / wf2.Wall.Seconds()
		p("| %d | %d DELETEs of their own namespace ≤ 1.3 × (claim, delete) floor | %.2f s / %.2f s = %.2f× (sweep minus no-op sweep: %.2f s, %.2f×) | %s |\n",
			n, due, del.Wall.Seconds(), wf2.Wall.Seconds(), dr2, (del.Wall - noop.Wall).Seconds(), (del.Wall-noop.Wall).Seconds()/wf2.Wall.Seconds(), met(dr2 <= 1.3))
	}
	if len(sizes) > 1 {
		lo, hi := sizes[0], sizes[len(sizes)-1]
		p("\n### Growth from %d to %d managers (%.0f× the managers)\n\n", lo, hi, float64(hi)/float64(lo))
		p("| measurement | wall at %d | wall at %d | growth | per manager at %d | per manager at %d |\n|---|---:|---:|---:|---:|---:|\n", lo, hi, lo, hi)
		for _, prefix := range []string{"floor: ", "floor + pods", "nsman sweep, first", "nsman sweep, no-op", "nsman sweep, " + strconv.Itoa(due)} {
			a, _ := find(lo, prefix)
			z, _ := find(hi, prefix)
			p("| %s | %.2f s | %.2f s | %.1f× | %.0f µs | %.0f µs |\n", a.What, a.Wall.Seconds(), z.Wall.Seconds(), z.Wall.Seconds()/a.Wall.Seconds(),
				float64(a.Wall.Microseconds())/float64(lo), float64(z.Wall.Microseconds())/float64(hi))
		}
		a, _ := find(lo, "nsman sweep, no-op")
		z, _ := find(hi, "nsman sweep, no-op")
		p("\nPeak RSS of the no-op sweep: %.1f MiB at %d, %.1f MiB at %d. Requests: %d at %d, %d at %d.\n",
			float64(a.MaxRSS)/1024, lo, float64(z.MaxRSS)/1024, hi, a.total(), lo, z.total(), hi)
	}
	p("\n### Sharding: %d due DELETEs among shards run side by side\n\n", due)
	p("Every shard lists every manager and handles those whose UID hashes to it; each shard's sweep is a process of its own.\n\n")
	p("| N | shards | wall | speed-up | requests | writes | peak RSS of a shard | fired per shard |\n|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, n := range sizes {
		one, _ := find(n, "nsman sweep, "+strconv.Itoa(due))
		p("| %d | 1 | %.2f s | 1.0× | %d | %d | %.1f MiB | %d |\n", n, one.Wall.Seconds(), one.total(), one.writes(), float64(one.MaxRSS)/1024, one.States[sweep.StateFired])
		for _, shards := range shardCounts {
			m, ok := find(n, fmt.Sprintf("nsman, %d due for DELETE, %d shards", due, shards))
			if !ok {
				continue
			}
			p("| %d | %d | %.2f s | %.1f× | %d | %d | %.1f MiB | %s |\n", n, shards, m.Wall.Seconds(), one.Wall.Seconds()/m.Wall.Seconds(),
				m.total(), m.writes(), float64(m.MaxRSS)/1024, strings.TrimPrefix(m.Note, "shards: "))
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
