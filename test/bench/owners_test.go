package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/owner"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// The owners benchmark (issue 46): one rule with OWNER_GONE over n
// namespaces, each owned by an Argo CD Application that its tracking id
// names, on the real Argo CD and Flux CRDs, in a control plane of its own.
//
// The part runs at each size of the run, in a control plane of its own.
// Its no-op target is set at noopTargetSize, as the managers' is: at 1,000
// namespaces (the "1,000 namespaces, 1,000 Applications") what a
// sweep pays besides its lists (a process's start, a new connection, the
// discovery of where managers keep their status, deciding each namespace
// and writing the report) weighs as much as the lists; the floors, run in
// the driver on a connection kept across rounds, pay only the lists.
const (
	// ownersLabel=on is what the rule selects namespaces by.
	ownersLabel = "nsman.bench/owners"
	// ownersRulesNamespace holds the rule; nsman runs with it trusted.
	ownersRulesNamespace = "bench-owners"
	ownersRuleName       = "previews"
	ownersPolicyName     = "orphans"
	// ownersPrefix names the namespaces the rule matches, also their set,
	// and each one's Application.
	ownersPrefix = "pr"
	// argoCDNamespace holds the Applications: nsman's --argocd-namespace,
	// passed as its default says.
	argoCDNamespace = "argocd"
	// ownersGoneShare: each round deletes one in ownersGoneShare of the
	// Applications.
	ownersGoneShare = 10
	// ownersFirstLabel labels nsman's first sweep, which records each
	// namespace's owner.
	ownersFirstLabel = firstSweepLabel + " (records each namespace's owner)"
	// ownersListsPrefix starts the label of the read floor with the
	// owner lists.
	ownersListsPrefix = floorPlusPrefix + "paged LIST of each owner kind the rule's namespaces name"
	// versionLabel labels the diagnostic of what a sweep costs before its
	// first request: nsman version, started as the sweeps are.
	versionLabel = "diagnostic: nsman version (process start, no request)"
)

// ownersGone is how many Applications each round deletes, of n.
func ownersGone(n int) int { return max(n/ownersGoneShare, 1) }

func ownersGoneLabel(gone int) string {
	return fmt.Sprintf("nsman sweep, %d owners gone: OWNER_GONE (grace 0) → DELETE", gone)
}

// ownersListsLabel is the label of the read floor with the lists of kinds.
func ownersListsLabel(kinds []owner.Kind) string {
	var names []string
	for _, k := range kinds {
		names = append(names, k.Resource.Resource)
	}
	return ownersListsPrefix + " (" + strings.Join(names, ", ") + ")"
}

// applicationKind is Argo CD's Application, as internal/owner registers it.
func applicationKind() owner.Kind {
	for _, k := range owner.Kinds() {
		if k.Name == "Application" {
			return k
		}
	}
	panic("internal/owner registers no Application")
}

// unnamedKinds are the owner kinds no seeded namespace names: installed,
// and never listed by a sweep, which lists a kind at its first need.
func unnamedKinds() []owner.Kind {
	return slices.DeleteFunc(owner.Kinds(), func(k owner.Kind) bool { return k.Name == "Application" })
}

// measureOwners starts a control plane, installs Argo CD's and Flux's
// CRDs, seeds n namespaces, each with an Argo CD tracking id naming its own
// Application in argoCDNamespace, those n Applications, and a rule over the
// namespaces with OWNER_GONE (grace 0) → DELETE, and measures, in order:
// nsman's first sweep; readRounds times over, interleaved, the read floor,
// the read floor with the Applications' list and the no-op sweep (every
// owner present); then deleteRounds times over, with ownersGone(n) more
// Applications deleted, nsman's sweep that finds them gone and deletes
// their namespaces. It fails the run unless every sweep listed the
// Applications in one paged list and no other owner kind.
//
// A grace of 0 makes the sweep that finds the owners gone the one that
// deletes their namespaces: the row is what the condition is for, each
// namespace fired once; with a grace, that sweep would only record when
// each owner went, the writes the first sweep's row already shows.
func measureOwners(t *testing.T, bin string, n int) ([]measurement, string) {
	t.Helper()
	gone := ownersGone(n)
	if deleteRounds*gone > n {
		t.Fatalf("owners: %d rounds of %d owners gone need %d of the %d", deleteRounds, gone, deleteRounds*gone, n)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Minute)
	defer cancel()
	s := startSession(ctx, t, bin, n)
	defer s.c.Stop()

	began := time.Now()
	nsmantest.InstallGitOpsCRDs(t, s.env.Dynamic)
	app := applicationKind()
	if err := s.seed.owned(ctx, app, n); err != nil {
		t.Fatalf("seed: %v", err)
	}
	if err := s.seed.namespace(ctx, ownersRulesNamespace, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.env.Dynamic.Resource(cluster.ManagerResource).Namespace(ownersRulesNamespace).Create(ctx, ownersRuleObject(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create rule: %v", err)
	}
	s.step("installed the GitOps CRDs, seeded %d namespaces, their %d Applications and the rule in %s", n, n, time.Since(began).Round(time.Millisecond))

	args := []string{"--trusted-namespaces", ownersRulesNamespace, "--argocd-namespace", argoCDNamespace}
	listed := s.ownerListsCheck(app)
	if _, err := s.audit.next(ctx); err != nil {
		t.Fatal(err)
	}
	first := s.sweepRow(ownersFirstLabel, args...)
	listed(first, 0)

	plusWhat := ownersListsLabel([]owner.Kind{app})
	var floors, pluses, noops, versions []measurement
	for range readRounds {
		floors = append(floors, s.readFloor())
		pluses = append(pluses, s.readFloorPlus(plusWhat, func() (string, error) { return floorOwnerLists(ctx, s.sa, []owner.Kind{app}) }))
		m := s.noop(noopLabel, args...)
		listed(m, 0)
		noops = append(noops, m)
		versions = append(versions, s.processStart(bin))
	}
	s.rows = append(s.rows, median(floors), median(pluses), median(noops), median(versions))

	var sweeps []measurement
	for r := range deleteRounds {
		from := r * gone
		if err := inParallel(ctx, seedConcurrency, gone, func(ctx context.Context, j int) error {
			return s.env.Dynamic.Resource(app.Resource).Namespace(argoCDNamespace).Delete(ctx, seededName(ownersPrefix, from+j), metav1.DeleteOptions{})
		}); err != nil {
			t.Fatalf("delete Applications: %v", err)
		}
		m := s.measureSweep(ownersGoneLabel(gone), args...)
		listed(m, from+gone)
		if got := m.States[report.StateFired]; got != gone {
			t.Errorf("owners over %d: sweep %d fired %d, want %d (%v)", n, r, got, gone, m.States)
		}
		if got, want := m.States[report.StateWaiting], n-from-gone; got != want {
			t.Errorf("owners over %d: sweep %d left %d waiting, want %d (%v)", n, r, got, want, m.States)
		}
		if err := s.seed.deletedAre(ctx, from, from+gone, n); err != nil {
			t.Errorf("owners over %d: sweep %d: %v", n, r, err)
		}
		if err := s.seed.finalize(ctx, ownersPrefix, n); err != nil {
			t.Fatal(err)
		}
		sweeps = append(sweeps, m)
	}
	del := median(sweeps)
	s.rows = append(s.rows, del)
	s.step("sweeps finding %d owners gone %s: median %s", gone, walls(sweeps), del.Wall.Round(time.Millisecond))
	return s.rows, s.version
}

// processStart measures `nsman version` through the launcher, as the sweeps
// are run: the process's start, which a sweep pays before its first
// request and the floors, run in the driver, do not.
func (s *session) processStart(bin string) measurement {
	run, err := nsmantest.Launch(s.ctx, nil, nil, bin, "version")
	if err != nil {
		s.t.Fatal(err)
	}
	if run.Code != 0 {
		s.t.Errorf("nsman version exited %d", run.Code)
	}
	m := s.measured(measurement{What: versionLabel, Wall: run.Wall, MaxRSS: run.MaxRSS})
	if m.total() != 0 {
		s.t.Errorf("nsman version made requests: %s", describe(m.Audited))
	}
	return m
}

// ownerListsCheck returns a check of sweep m, made when deleted of the
// n Applications were gone: that it listed the Applications in as many
// requests as one paged list of those left takes (the API server may end a
// list whose length is a multiple of the page size with an empty page), and
// no other owner kind.
func (s *session) ownerListsCheck(app owner.Kind) func(m measurement, deleted int) {
	return func(m measurement, deleted int) {
		pages := (s.n - deleted + pageSize - 1) / pageSize
		if got := m.count("list", app.Resource.Resource); got < max(pages, 1) || got > pages+1 {
			s.t.Errorf("owners over %d: %s listed %s %d times, want one paged list of %d (%d pages of %d, or one more for a last empty page) (%s)",
				s.n, m.What, app.Resource.Resource, got, s.n-deleted, pages, pageSize, describe(m.Audited))
		}
		for _, k := range unnamedKinds() {
			if got := m.count("list", k.Resource.Resource); got != 0 {
				s.t.Errorf("owners over %d: %s listed %s %d times, which no namespace names (%s)", s.n, m.What, k.Resource.Resource, got, describe(m.Audited))
			}
		}
	}
}

// ownersRuleObject is the rule: in ownersRulesNamespace, over the
// namespaces labelled ownersLabel=on, OWNER_GONE with a grace of 0 →
// DELETE.
func ownersRuleObject() *unstructured.Unstructured {
	return newManager(ownersRulesNamespace, ownersRuleName, map[string]any{
		"namespaceSelector": map[string]any{"matchLabels": map[string]any{ownersLabel: "on"}},
		"policies": []any{map[string]any{
			"name":      ownersPolicyName,
			"condition": map[string]any{"type": policy.ConditionOwnerGone, "params": map[string]any{"graceSeconds": int64(0)}},
			"action":    map[string]any{"type": policy.ActionDelete},
		}},
	})
}

// trackingID is the Argo CD tracking id of namespace name, synced by the
// Application of the same name in Argo CD's namespace.
func trackingID(name string) string { return name + ":/Namespace:" + name + "/" + name }

// owned creates argoCDNamespace, then n namespaces ownersPrefix-00000…
// labelled setLabel=ownersPrefix and ownersLabel=on, each with the tracking
// id of its own Application of kind app (nsmantest.OwnerObject), which it
// creates.
func (s seeder) owned(ctx context.Context, app owner.Kind, n int) error {
	if err := s.namespace(ctx, argoCDNamespace, nil); err != nil {
		return err
	}
	labels := map[string]string{setLabel: ownersPrefix, ownersLabel: "on"}
	return inParallel(ctx, seedConcurrency, n, func(ctx context.Context, i int) error {
		name := seededName(ownersPrefix, i)
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels,
			Annotations: map[string]string{"argocd.argoproj.io/tracking-id": trackingID(name)}}}
		if err := create(ctx, func() error {
			_, err := s.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("create namespace %s: %w", name, err)
		}
		if err := create(ctx, func() error {
			_, err := s.dyn.Resource(app.Resource).Namespace(argoCDNamespace).Create(ctx, nsmantest.OwnerObject(app, argoCDNamespace, name), metav1.CreateOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("create Application %s: %w", name, err)
		}
		return nil
	})
}

// deletedAre checks, as the admin, that of the n namespaces
// ownersPrefix-00000…, those from from up to to are being deleted and the
// rest after them are not.
func (s seeder) deletedAre(ctx context.Context, from, to, n int) error {
	list, err := s.kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: setLabel + "=" + ownersPrefix})
	if err != nil {
		return err
	}
	var wrong []string
	deleting := 0
	for _, ns := range list.Items {
		var i int
		if _, err := fmt.Sscanf(ns.Name, ownersPrefix+"-%d", &i); err != nil {
			return fmt.Errorf("namespace %s in set %s: %w", ns.Name, ownersPrefix, err)
		}
		if i < from {
			continue // deleted in an earlier round, finalized since
		}
		want := i < to
		if got := ns.DeletionTimestamp != nil; got != want {
			wrong = append(wrong, fmt.Sprintf("%s being deleted: %v", ns.Name, got))
		}
		deleting += btoi(ns.DeletionTimestamp != nil)
	}
	if len(wrong) > 0 || deleting != to-from || len(list.Items) != n-from {
		return fmt.Errorf("%d namespaces left of the %d seeded, want %d; %d being deleted, want %d (%s…)",
			len(list.Items), n, n-from, deleting, to-from, strings.Join(wrong[:min(len(wrong), 5)], "; "))
	}
	return nil
}

// floorOwnerLists lists, cluster-wide and paged by pageSize as nsman
// does, each owner kind of kinds: one whose spec nsman reads (an
// Application's destination and sync options) as JSON decoded into
// owner.Item, the rest of each object read past; the others as metadata
// only. It says how many objects of each it found.
func floorOwnerLists(ctx context.Context, cfg *rest.Config, kinds []owner.Kind) (string, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	var counts []string
	for _, k := range kinds {
		objects := 0
		if !k.ReadsSpec() {
			if objects, err = resourcePages(ctx, cfg, k.Resource, metav1.ListOptions{}); err != nil {
				return "", err
			}
			counts = append(counts, fmt.Sprintf("%d %s", objects, k.Resource.Resource))
			continue
		}
		for next := ""; ; {
			req := kube.Discovery().RESTClient().Get().AbsPath("/apis", k.Resource.Group, k.Resource.Version, k.Resource.Resource).Param("limit", fmt.Sprint(pageSize))
			if next != "" {
				req = req.Param("continue", next)
			}
			raw, err := req.DoRaw(ctx)
			if err != nil {
				return "", fmt.Errorf("list %s: %w", k.Resource.GroupResource(), err)
			}
			var page struct {
				Metadata struct {
					Continue string `json:"continue"`
				} `json:"metadata"`
				Items []owner.Item `json:"items"`
			}
			if err := json.Unmarshal(raw, &page); err != nil {
				return "", fmt.Errorf("list %s: %w", k.Resource.GroupResource(), err)
			}
			objects += len(page.Items)
			if next = page.Metadata.Continue; next == "" {
				break
			}
		}
		counts = append(counts, fmt.Sprintf("%d %s", objects, k.Resource.Resource))
	}
	return strings.Join(counts, ", "), nil
}

// ownersNoopBound: the owners part's no-op sweep against the read floor
// with the owner lists (issue 46).
const ownersNoopBound = 1.3

// ownersRows are the owners part's rows, found by label.
type ownersRows struct {
	first, floor, lists, noop, version, gone measurement
}

// ownersRowsOf are the owners part's rows of size n.
func ownersRowsOf(rows rowSet, n int) ownersRows {
	return ownersRows{
		first: rows.must(n, ownersFirstLabel), floor: rows.must(n, readFloorLabel), lists: rows.must(n, ownersListsPrefix),
		noop: rows.must(n, noopLabel), version: rows.must(n, versionLabel), gone: rows.must(n, ownersGoneLabel(ownersGone(n))),
	}
}

// ownerLists says how many times m listed each owner kind.
func ownerLists(m measurement) string {
	var parts []string
	for _, k := range owner.Kinds() {
		parts = append(parts, fmt.Sprintf("%s %d", k.Resource.Resource, m.count("list", k.Resource.Resource)))
	}
	return strings.Join(parts, ", ")
}

// ownersTargets computes the owners part's targets, at each size
// measured.
func ownersTargets(rows rowSet) []target {
	var ts []target
	for _, n := range sizesOf(rows) {
		ts = append(ts, ownersTargetsAt(rows, n)...)
	}
	return ts
}

// ownersTargetsAt are the owners part's targets at size n; the no-op one
// is set at noopTargetSize.
func ownersTargetsAt(rows rowSet, n int) []target {
	r := ownersRowsOf(rows, n)
	apps := applicationKind().Resource.Resource
	x := ratio(r.noop.Wall, r.lists.Wall)
	// One list per kind: each sweep's lists of the Applications are at
	// most the floor's one paged list of them, and it lists no kind that
	// no namespace names.
	once := true
	for _, m := range []measurement{r.first, r.noop, r.gone} {
		got := m.count("list", apps)
		once = once && got >= 1 && got <= r.lists.count("list", apps)
		for _, k := range unnamedKinds() {
			once = once && m.count("list", k.Resource.Resource) == 0
		}
	}
	peak, at := peakRSS(rows, n)
	return []target{
		setAt(noopTargetSize, target{N: n, Source: "46", Met: x <= ownersNoopBound,
			What: fmt.Sprintf("owners: no-op sweep ≤ %.1f × read floor incl. the owner lists", ownersNoopBound),
			Measured: fmt.Sprintf("%s / %s = %.2f× (floor without them: %s, %.2f×)",
				r.noop.at(), r.lists.at(), x, r.floor.at(), ratio(r.noop.Wall, r.floor.Wall))}),
		{N: n, What: "owners: zero writes in a no-op sweep", Source: "46",
			Measured: fmt.Sprintf("%d (%s)", r.noop.writes(), r.noop.ref()), Met: r.noop.writes() == 0},
		{N: n, What: "owners: one list per owner kind per sweep", Source: "46", Met: once,
			Measured: fmt.Sprintf("first %s (%s), no-op %s (%s), owners gone %s (%s); the floor's paged list: %s %d (%s)",
				ownerLists(r.first), r.first.ref(), ownerLists(r.noop), r.noop.ref(), ownerLists(r.gone), r.gone.ref(),
				apps, r.lists.count("list", apps), r.lists.ref())},
		{N: n, What: fmt.Sprintf("owners: peak RSS ≤ %d MiB, over every nsman sweep", rssBoundMiB), Source: "46, OE",
			Measured: fmt.Sprintf("%s (%s)", mib(peak), at.ref()), Met: float64(peak)/1024 <= rssBoundMiB},
	}
}

// ownersMethod describes the owners part.
func ownersMethod(b *strings.Builder, rows rowSet) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	sizes := sizesOf(rows)
	var unnamed []string
	for _, k := range unnamedKinds() {
		unnamed = append(unnamed, k.Name+"s")
	}
	p("A fresh control plane of its own for each size N measured (%s), with the real CRDs of Argo CD's\n", andList(sizes))
	p("Application and of Flux's %s (nsmantest.InstallGitOpsCRDs, at the versions test/tools/gitops pins; no\n", strings.Join(unnamed, " and "))
	p("controller runs). Seeded: N namespaces labelled `%s=on`, each with the annotation `argocd.argoproj.io/tracking-id:\n", ownersLabel)
	p("<name>:/Namespace:<name>/<name>` that names the Application of its own name in `%s`; those N Applications\n", argoCDNamespace)
	p("(nsmantest.OwnerObject); no object of the Flux kinds, which no namespace names; and one rule, `%s/%s`, in its own\n", ownersRulesNamespace, ownersRuleName)
	p("namespace (nsman runs with `--trusted-namespaces %s --argocd-namespace %s`, the latter its default), over the\n", ownersRulesNamespace, argoCDNamespace)
	p("namespaces, with one policy: `%s` (graceSeconds 0) → DELETE. nsman's first sweep records each namespace's owner;\n", policy.ConditionOwnerGone)
	p("then the read floor, the read floor with the owner lists, a no-op sweep, every owner present, and, a diagnostic, `nsman\n")
	p("version` started as the sweeps are (the process's start, which a sweep pays before its first request and the floors, run in\n")
	p("the driver, do not) are measured %d times, interleaved. The read floor lists the managers and the namespaces as in\n", readRounds)
	p("\"Managers\"; the next row adds one paged list (page size %d) of each owner kind the namespaces name, cluster-wide, as\n", pageSize)
	p("nsman reads it (internal/probe/owners.go, cluster.EachOwner):\n")
	p("the Applications as JSON, decoded into their metadata and the spec fields nsman reads (destination, sync options); a kind\n")
	p("whose spec nsman does not read would be listed as metadata only, and one no namespace names is not listed at all. Then, %d\n", deleteRounds)
	p("times over, N/%d more Applications are deleted (untimed), as when their pull requests close, and nsman sweeps: it finds their\n", ownersGoneShare)
	p("owners gone and, the grace being 0, deletes those namespaces in the same sweep; the generator finalizes them after it (untimed),\n")
	p("as the namespace controller would. A grace of 0 makes that sweep the one that does what the condition is for; with a grace, it\n")
	p("would only record when each owner went, writes the first sweep's row already shows. The rows are the median runs; the notes\n")
	p("list every run. The generator fails the run unless every sweep listed the Applications in one paged list and listed no\n")
	p("other owner kind (audit log), the no-op sweeps wrote nothing and found every namespace waiting, and each sweep after a deletion\n")
	p("fired on exactly the namespaces whose Applications went. The no-op target is set at %d, as the managers' is: at 1000\n", noopTargetSize)
	p("namespaces what a sweep pays besides its lists (a process's start, a new connection, the discovery of where managers keep\n")
	p("their status, deciding each namespace and writing the report) weighs as much as the lists, where the floors, run in the\n")
	p("driver on a connection kept across rounds, pay only the lists; the row at 1000 is measured, its target marked not set.\n\n")
}

// ownersAnalysis writes what the owners part says, at each size measured.
func ownersAnalysis(b *strings.Builder, rows rowSet) {
	for _, n := range sizesOf(rows) {
		ownersAnalysisAt(b, rows, n)
	}
}

// ownersAnalysisAt writes what the owners part says at size n.
func ownersAnalysisAt(b *strings.Builder, rows rowSet, n int) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	r := ownersRowsOf(rows, n)
	apps := applicationKind().Resource.Resource
	gone := ownersGone(n)
	each, _, besides := writesOf(r.gone, max(r.gone.States[report.StateFired], 1))
	p("**A rule with OWNER_GONE over %d namespaces.** The first sweep took %s and wrote %d requests (%s). The no-op sweep took %s:\n",
		n, r.first.at(), r.first.writes(), cmpOr(describe(writesOnly(r.first)), "none"), r.noop.at())
	p("%.2f× the read floor with the owner lists (%s) and %.2f× the read floor (%s), which reads no owner; it made %d requests,\n",
		ratio(r.noop.Wall, r.lists.Wall), r.lists.at(), ratio(r.noop.Wall, r.floor.Wall), r.floor.ref(), r.noop.total())
	p("%d of them lists of %s, where the floor with the owner lists made %d, %d of them (more: %s).\n",
		r.noop.count("list", apps), apps, r.lists.total(), r.lists.count("list", apps), cmpOr(describe(moreRequests(r.noop, r.lists)), "none"))
	net := r.noop.Wall - r.version.Wall
	p("`nsman version`, started as the sweeps are and making no request, took %s: the no-op sweep less that start is %s,\n", r.version.at(), sec(net))
	p("%.2f× the read floor with the owner lists, which runs in the driver's process and starts none.\n", ratio(net, r.lists.Wall))
	p("The sweep that found %d owners gone took %s and fired %d; it wrote per namespace %s", gone, r.gone.at(),
		r.gone.States[report.StateFired], cmpOr(describe(each), "none"))
	if len(besides) > 0 {
		p(", and %s besides", describe(besides))
	}
	p(";\nits requests beyond the no-op sweep's: %s.\n\n", cmpOr(describe(moreRequests(r.gone, r.noop)), "none"))
}

// writesOnly are m's audited writes, by "verb resource".
func writesOnly(m measurement) map[string]int {
	out := map[string]int{}
	for k, v := range m.Audited {
		if !isRead(k) {
			out[k] = v
		}
	}
	return out
}
