package layout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/nsman/nsman"

// layers places every package of nsman outside test/ (by its path in the
// module) and says which of nsman's packages it may import: imports go one
// way, sweep → execute → decide, record, probe, tell → write, cluster →
// listpage, status → report. policy, the domain's vocabulary, is open to
// every package but webhook, which a receiver imports without the rest of
// nsman. webhook is open to the packages that send HTTP. Packages of the
// layout that do not exist yet are placed already, so that moving code into
// one needs no edit here; a place for a package that does not exist is not
// an error.
// TestLayersKeepTheIssuesRules holds the table itself to issue 32's rules.
var layers = map[string][]string{
	"cmd/nsman": {"cmd", "internal/memory", "internal/roots", "policy"},
	"cmd": {
		"sweep", "doctor", "explain", "due", "metrics",
		"internal/execute", "internal/decide", "internal/record", "internal/probe", "internal/reclaim", "internal/usage", "internal/tell",
		"internal/write", "internal/cluster", "internal/workload", "internal/owner", "internal/listpage", "internal/status",
		"internal/printer", "internal/console", "internal/duration", "internal/connect", "internal/complete", "internal/prom", "report", "deploy", "webhook", "links", "serve", "policy", "policy/traffic", "policy/patch", "policy/durtext",
	},
	"doctor":  {"internal/cluster", "internal/owner", "internal/listpage", "internal/status", "report", "deploy", "webhook", "policy"},
	"explain": {"internal/cluster", "internal/owner", "internal/listpage", "internal/status", "report", "policy"},
	// due follows what a dry run says is due soon through dry runs at its
	// due times, which cmd hands it: it imports no sweep.
	"due": {"internal/printer", "internal/duration", "report", "policy", "policy/durtext"},
	"sweep": {
		"internal/execute", "internal/decide", "internal/record", "internal/probe", "internal/reclaim", "internal/usage", "internal/tell",
		"internal/write", "internal/cluster", "internal/workload", "internal/owner", "internal/listpage", "internal/status",
		"report", "webhook", "policy", "policy/patch",
	},
	"internal/execute": {
		"internal/decide", "internal/record", "internal/probe", "internal/reclaim", "internal/tell",
		"internal/write", "internal/cluster", "internal/workload", "internal/owner", "internal/listpage", "internal/status",
		"report", "webhook", "policy", "policy/patch",
	},
	// decide declares the interfaces it needs (namespaces, pods checks,
	// activity, stuck, the action budget) rather than importing probe.
	"internal/decide": {"internal/cluster", "internal/listpage", "internal/status", "report", "policy", "policy/traffic", "policy/patch", "policy/warn", "policy/durtext"},
	"internal/record": {"internal/write", "internal/cluster", "internal/listpage", "internal/status", "report", "policy"},
	"internal/probe":  {"internal/cluster", "internal/workload", "internal/owner", "internal/listpage", "internal/status", "report", "policy", "policy/patch"},
	// usage reads what Prometheus says of the namespaces' use.
	"internal/usage": {"internal/cluster", "internal/status", "policy", "policy/traffic"},
	// reclaim reads what a DELETE frees, as probe reads the rest.
	"internal/reclaim": {"internal/probe", "internal/cluster", "internal/workload", "internal/owner", "internal/listpage", "internal/status", "report", "policy", "policy/traffic"},
	"internal/tell":    {"internal/write", "internal/cluster", "internal/listpage", "internal/status", "report", "webhook", "links", "policy"},
	// telltest is test fixtures: a receiver that answers as a hostile one.
	"internal/tell/telltest": {},
	"internal/write":         {"internal/cluster", "internal/listpage", "internal/status", "report", "webhook", "policy"},
	"internal/cluster":       {"internal/workload", "internal/owner", "internal/listpage", "internal/status", "report", "policy"},
	// workload is each kind of workload nsman puts to sleep, one home per
	// way it sleeps, making no request.
	"internal/workload": {"internal/status", "report", "policy", "policy/patch"},
	// owner is each kind of object that owns a namespace, one home per
	// kind, making no request.
	"internal/owner": {"internal/status", "report", "policy"},
	// listpage decodes what a list answers, with no client.
	"internal/listpage": {"internal/status", "report", "policy"},
	// listpagetest is test fixtures of managers and pages of them as
	// listed, for the tests of the packages that decode them.
	"internal/listpage/listpagetest": {},
	// clustertest is test fixtures: a client of a test server that serves
	// managers, and a fake API server's discovery.
	"internal/cluster/clustertest": {"internal/cluster", "policy"},
	"internal/status":              {"report", "policy"},
	// printer prints a sweep's report, as -o asks.
	"internal/printer": {"report", "policy"},
	"metrics":          {"report", "policy"},
	"report":           {"policy"},
	// policy's own packages: a part of the domain's vocabulary that
	// policy imports, and that imports nothing of nsman but policy's own.
	"policy":         {"policy/window", "policy/traffic", "policy/patch", "policy/warn", "policy/durtext"},
	"policy/window":  {},
	"policy/warn":    {"policy/durtext"},
	"policy/traffic": {"policy/durtext"},
	"policy/patch":   {},
	// durtext says a duration as users write one (30d, 2h30m): under
	// policy so that policy's messages say it too, and open to all.
	"policy/durtext": {},
	// prom asks a Prometheus a query, bounded, knowing nothing of what it
	// means.
	"internal/prom": {"internal/duration"},
	"webhook":       {},
	// links signs and verifies the links of notifications, standing alone
	// as webhook does.
	"links": {},
	// serve answers links (nsman serve): it reads a namespace and writes
	// what nsman hold or nsman wake writes, through execute.
	"serve": {"internal/execute", "internal/decide", "internal/cluster", "internal/status", "internal/duration", "links", "policy", "policy/durtext"},
	// deploy holds manifests, layout no code at all.
	"deploy":          {},
	"internal/layout": {},
	// duration is the value of cmd's duration flags, days and weeks
	// included.
	"internal/duration": {"policy/durtext"},
	// console is what cmd writes for a person at a terminal: whether a
	// writer is one and takes colour, and short log lines.
	"internal/console": {},
	// connect is how cmd reaches a cluster: kubectl's connection flags
	// and the client configuration they name.
	"internal/connect": {},
	// complete is the commands' shell completion: the kubeconfig's names,
	// and namespaces and managers read through cluster, bounded.
	"internal/complete": {"internal/connect", "internal/cluster"},
	// memory is the process's GC target, its floor, and the soft memory
	// limit its cgroup's limit sets, which main applies before anything.
	"internal/memory": {},
	// roots gives crypto/x509 the fallback root certificates where the
	// system has none, which main applies before anything.
	"internal/roots": {},
	// docgen keeps the generated part of a document, for the tests of
	// the packages that generate one.
	"internal/docgen": {},
	// crdref renders the CRD's reference from the CRD and policy's defaults.
	"internal/crdref": {"deploy", "policy"},
}

// edge is an import of one package of nsman by another.
type edge struct{ from, to string }

// untilMoved are imports the code still has that issue 32's layout forbids,
// each with what has to move before it goes. TestImportsGoOneWay allows
// them and fails once the code no longer has one, so that the allowance
// goes with it.
var untilMoved = map[edge]string{}

// writers are the packages that may send a mutating API request. An entry
// that says "until" is a debt: TestOnlyWritersSendMutatingRequests fails
// once the package sends none, so that the entry goes.
var writers = map[string]string{
	"internal/write": "",
	"cmd":            "",
	// Access reviews are created, not the objects nsman manages.
	"doctor": "",
	// A sweep's access review of each kind discovery finds (MayPatchEverywhere).
	"internal/cluster": "",
}

// Bounds of issue 32.
const (
	maxMethods    = 25
	maxFuncLines  = 60
	maxSweepLines = 1500
	maxPkgLines   = 2500
)

// knownOver are the sizes over their bound that the code may keep, each at
// its size when it was recorded: a package's lines (the key is the package),
// a function's lines (pkg.Func, or pkg.Type.Method for a method) or a type's
// methods (pkg.Type). Issue 32 emptied it; a size over its bound that is not
// here, one that grew past its entry, and an entry no longer over its bound
// all fail, so that an exception is a change someone reviews.
var knownOver = map[string]int{}

// goPackage is what go list says of a package.
type goPackage struct {
	ImportPath     string
	Dir            string
	GoFiles        []string
	CgoFiles       []string
	IgnoredGoFiles []string
	Imports        []string
	TestImports    []string
	XTestImports   []string
	Error          *struct{ Err string }
}

// rel is a package's path in the module.
func rel(importPath string) string {
	if importPath == module {
		return "."
	}
	return strings.TrimPrefix(importPath, module+"/")
}

// underTest says whether a package is one of the test packages, which may
// import anything and are held to none of the rules.
func underTest(p string) bool { return p == "test" || strings.HasPrefix(p, "test/") }

// nsman says whether an import path is one of nsman's packages.
func nsman(importPath string) bool {
	return importPath == module || strings.HasPrefix(importPath, module+"/")
}

// goList runs go list from this directory, inside the module.
func goList(args ...string) ([]byte, error) {
	goCmd, err := exec.LookPath("go") // go test puts its own go first in PATH
	if err != nil {
		return nil, fmt.Errorf("go command not found: %w", err)
	}
	out, err := exec.Command(goCmd, append([]string{"list"}, args...)...).Output()
	if err != nil {
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			return nil, fmt.Errorf("go list %s: %w\n%s", strings.Join(args, " "), err, ee.Stderr)
		}
		return nil, fmt.Errorf("go list %s: %w", strings.Join(args, " "), err)
	}
	return out, nil
}

// packages are nsman's packages outside test/, listed once for every test.
var packages = sync.OnceValues(func() ([]goPackage, error) {
	out, err := goList("-json=ImportPath,Dir,GoFiles,CgoFiles,IgnoredGoFiles,Imports,TestImports,XTestImports,Error", module+"/...")
	if err != nil {
		return nil, err
	}
	var pkgs []goPackage
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list's output: %w", err)
		}
		if p.Error != nil {
			return nil, fmt.Errorf("go list %s: %s", p.ImportPath, p.Error.Err)
		}
		if !underTest(rel(p.ImportPath)) {
			pkgs = append(pkgs, p)
		}
	}
	// A list without the packages the rules are about would pass every
	// test while checking nothing.
	for _, want := range []string{"sweep", "policy", "internal/layout"} {
		if !slices.ContainsFunc(pkgs, func(p goPackage) bool { return rel(p.ImportPath) == want }) {
			return nil, fmt.Errorf("go list ./... lists no %s: the tests would check nothing", want)
		}
	}
	return pkgs, nil
})

func listPackages(t *testing.T) []goPackage {
	t.Helper()
	pkgs, err := packages()
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// sourceFile is one non-test file of a package, parsed.
type sourceFile struct {
	pkg   string // the package's path in the module
	path  string // the file's path in the module
	lines int
	ast   *ast.File
}

var fset = token.NewFileSet()

// sources are the non-test files of nsman's packages outside test/, parsed
// once for every test; files other platforms build are included, since the
// rules hold for them too.
var sources = sync.OnceValues(func() ([]sourceFile, error) {
	pkgs, err := packages()
	if err != nil {
		return nil, err
	}
	var files []sourceFile
	for _, p := range pkgs {
		names := slices.Concat(p.GoFiles, p.CgoFiles)
		for _, name := range p.IgnoredGoFiles {
			if strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
				names = append(names, name)
			}
		}
		for _, name := range names {
			src, err := os.ReadFile(filepath.Join(p.Dir, name))
			if err != nil {
				return nil, err
			}
			pkg := rel(p.ImportPath)
			path := filepath.ToSlash(filepath.Join(pkg, name))
			f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
			if err != nil {
				return nil, err
			}
			lines := bytes.Count(src, []byte("\n"))
			if len(src) > 0 && src[len(src)-1] != '\n' {
				lines++
			}
			files = append(files, sourceFile{pkg: pkg, path: path, lines: lines, ast: f})
		}
	}
	return files, nil
})

func parseSources(t *testing.T) []sourceFile {
	t.Helper()
	files, err := sources()
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestLayersKeepTheIssuesRules holds the table of layers to issue 32's
// rules, so that an edit of the table cannot allow what the issue forbids.
func TestLayersKeepTheIssuesRules(t *testing.T) {
	neverWrite := []string{"internal/decide", "internal/probe", "internal/reclaim", "internal/cluster", "internal/status", "report"}
	for from, tos := range layers {
		for _, to := range tos {
			switch {
			case to == from:
				t.Errorf("layers lets %s import itself", from)
			case layers[to] == nil:
				t.Errorf("layers lets %s import %s, which layers does not place", from, to)
			case to == "sweep" && from != "cmd" && from != "cmd/nsman":
				t.Errorf("layers lets %s import sweep: nothing but cmd imports sweep", from)
			case to == "internal/write" && slices.Contains(neverWrite, from):
				t.Errorf("layers lets %s import internal/write: none of %s imports write", from, strings.Join(neverWrite, ", "))
			case from == "metrics" && to != "report" && to != "policy":
				t.Errorf("layers lets metrics import %s: metrics imports only report and policy", to)
			case (from == "policy" || strings.HasPrefix(from, "policy/")) && !strings.HasPrefix(to, "policy/"):
				t.Errorf("layers lets %s import %s: %s imports nothing of nsman but policy's own packages", from, to, from)
			case from == "webhook":
				t.Errorf("layers lets %s import %s: %s imports nothing of nsman", from, to, from)
			}
		}
	}
	// Imports that go one way leave no cycle: a package reached again on
	// the path that leads to it closes one.
	state := map[string]int{} // 1 on the path, 2 done
	var visit func(p string, path []string)
	visit = func(p string, path []string) {
		switch state[p] {
		case 1:
			cycle := append(path[slices.Index(path, p):], p)
			t.Errorf("layers has a cycle: %s", strings.Join(cycle, " → "))
			return
		case 2:
			return
		}
		state[p] = 1
		for _, to := range layers[p] {
			visit(to, append(path, p))
		}
		state[p] = 2
	}
	for _, p := range slices.Sorted(maps.Keys(layers)) {
		visit(p, nil)
	}
	for e, why := range untilMoved {
		if layers[e.from] == nil || layers[e.to] == nil {
			t.Errorf("untilMoved allows %s → %s (%s), which layers does not place", e.from, e.to, why)
		}
	}
}

// TestImportsGoOneWay checks every package's imports (test files aside)
// against layers.
func TestImportsGoOneWay(t *testing.T) {
	used := map[edge]bool{}
	for _, p := range listPackages(t) {
		from := rel(p.ImportPath)
		allowed, placed := layers[from]
		if !placed {
			t.Errorf("package %s is not placed in layers: say which of nsman's packages it may import", from)
			continue
		}
		for _, imp := range p.Imports {
			if !nsman(imp) {
				continue
			}
			to := rel(imp)
			e := edge{from, to}
			if _, ok := untilMoved[e]; ok {
				used[e] = true
				continue
			}
			if !slices.Contains(allowed, to) {
				t.Errorf("%s imports %s, which layers does not allow it (it may import %s)", from, to, orNothing(allowed))
			}
		}
	}
	for e, why := range untilMoved {
		if !used[e] {
			t.Errorf("%s no longer imports %s: drop it from untilMoved (%s)", e.from, e.to, why)
		}
	}
}

func orNothing(pkgs []string) string {
	if len(pkgs) == 0 {
		return "nothing of nsman"
	}
	return strings.Join(pkgs, ", ")
}

// TestOnlyCmdTestsImportSweep keeps sweep's callers to cmd in the tests too:
// a test elsewhere that drives a whole sweep tests sweep, not its own
// package. The test packages under test/ may.
func TestOnlyCmdTestsImportSweep(t *testing.T) {
	for _, p := range listPackages(t) {
		from := rel(p.ImportPath)
		if from == "cmd" || from == "sweep" {
			continue
		}
		if slices.Contains(p.TestImports, module+"/sweep") || slices.Contains(p.XTestImports, module+"/sweep") {
			t.Errorf("a test of %s imports sweep: only cmd's tests and those under test/ may", from)
		}
	}
}

// standardLibraryOnly are the packages a receiver or a link checker
// imports without client-go or anything else of nsman's, and the leaf that
// says durations: every package they depend on, transitively, is in the
// standard library.
var standardLibraryOnly = []string{"webhook", "links", "policy/durtext"}

// TestStandardLibraryOnly holds standardLibraryOnly's packages to the
// standard library, however indirectly.
func TestStandardLibraryOnly(t *testing.T) {
	for _, pkg := range standardLibraryOnly {
		self := module + "/" + pkg
		out, err := goList("-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", self)
		if err != nil {
			t.Fatal(err)
		}
		deps := strings.Fields(string(out))
		if !slices.Contains(deps, self) {
			t.Fatalf("go list -deps %s printed %q, which lacks the package itself: the check is not looking at it", pkg, deps)
		}
		for _, dep := range deps {
			if dep != self {
				t.Errorf("%s depends on %s, which is not in the standard library", pkg, dep)
			}
		}
	}
}

// TestPolicyImportsNoClientGoNorNsman keeps policy pure: no client-go,
// however indirectly, and nothing of nsman but policy's own packages
// (policy/window).
func TestPolicyImportsNoClientGoNorNsman(t *testing.T) {
	const self = module + "/policy"
	out, err := goList("-deps", "-f", "{{.ImportPath}}", self)
	if err != nil {
		t.Fatal(err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, self) || !slices.Contains(deps, "k8s.io/apimachinery/pkg/apis/meta/v1") {
		t.Fatalf("go list -deps printed %q, which lacks policy or its apimachinery: the check is not looking at it", deps)
	}
	for _, dep := range deps {
		switch {
		case dep == "k8s.io/client-go" || strings.HasPrefix(dep, "k8s.io/client-go/"):
			t.Errorf("policy depends on %s: it imports no client-go", dep)
		case dep != self && !strings.HasPrefix(dep, self+"/") && nsman(dep):
			t.Errorf("policy depends on %s: it imports nothing of nsman but its own packages", rel(dep))
		}
	}
}

// typedVerbs are the mutating calls of client-go's typed, dynamic and
// metadata clients, each with the request's context first.
var typedVerbs = map[string]bool{
	"Create": true, "Update": true, "UpdateStatus": true, "Patch": true,
	"Apply": true, "ApplyStatus": true, "Delete": true, "DeleteCollection": true,
}

// restVerbs are rest.Interface's mutating requests, with the number of
// arguments each takes.
var restVerbs = map[string]int{"Post": 0, "Put": 0, "Delete": 0, "Patch": 1}

// mutatingCalls finds the calls in f that send a mutating API request. It
// reads syntax, not types: type-checking the module with client-go from
// source takes far longer than the unit tests may, and syntax is enough
// because client-go's mutating calls have shapes of their own. A typed,
// dynamic or metadata client's takes the request's context first, which
// nsman names ctx (or …Ctx) or gets from Context(); same-named calls that
// are not requests (a sync.Map's Delete, slices.Delete, the delete builtin)
// take no context. rest.Interface's verbs take no argument but Patch's
// type; the verb is matched, not the Do that sends it, because a request
// may be built in steps (a subresource added in between). A wrapper that
// hides the call in another package is caught where it makes the call.
func mutatingCalls(f *ast.File) []string {
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		name := sel.Sel.Name
		switch {
		case typedVerbs[name] && len(call.Args) > 0 && isContext(call.Args[0]):
		case name == "Verb" && len(call.Args) == 1 && isMutatingMethod(call.Args[0]):
		default:
			if args, ok := restVerbs[name]; !ok || len(call.Args) != args || call.Ellipsis.IsValid() {
				return true
			}
		}
		found = append(found, fmt.Sprintf("%s: .%s", fset.Position(sel.Sel.Pos()), name))
		return true
	})
	return found
}

// isContext says whether an expression is, by its name, a context.
func isContext(e ast.Expr) bool {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		return strings.HasSuffix(strings.ToLower(e.Name), "ctx")
	case *ast.SelectorExpr:
		return strings.HasSuffix(strings.ToLower(e.Sel.Name), "ctx")
	case *ast.CallExpr:
		sel, ok := e.Fun.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		if sel.Sel.Name == "Context" && len(e.Args) == 0 {
			return true
		}
		pkg, ok := sel.X.(*ast.Ident)
		return ok && pkg.Name == "context" && slices.Contains([]string{"Background", "TODO", "WithoutCancel", "WithValue"}, sel.Sel.Name)
	}
	return false
}

// isMutatingMethod says whether an argument of rest's Verb names a mutating
// HTTP method.
func isMutatingMethod(e ast.Expr) bool {
	switch e := ast.Unparen(e).(type) {
	case *ast.BasicLit:
		s, err := strconv.Unquote(e.Value)
		return err == nil && slices.Contains([]string{"POST", "PUT", "PATCH", "DELETE"}, s)
	case *ast.SelectorExpr:
		return slices.Contains([]string{"MethodPost", "MethodPut", "MethodPatch", "MethodDelete"}, e.Sel.Name)
	}
	return false
}

func TestMutatingCallDetector(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       int
	}{
		{"typed delete", `kube.CoreV1().Namespaces().Delete(ctx, name, opts)`, 1},
		{"typed create with a command's context", `kube.EventsV1().Events(ns).Create(cmd.Context(), ev, metav1.CreateOptions{})`, 1},
		{"dynamic patch with a derived context", `dyn.Resource(r).Namespace(ns).Patch(actCtx, name, types.MergePatchType, p, metav1.PatchOptions{})`, 1},
		{"update status with a fresh context", `c.UpdateStatus(context.Background(), obj, metav1.UpdateOptions{})`, 1},
		{"apply with a context in a field", `c.Apply(s.ctx, obj, opts)`, 1},
		{"rest delete sent at once", `kube.CoreV1().RESTClient().Delete().Resource("namespaces").Name(n).Body(&opts).Do(ctx).Error()`, 1},
		{"rest patch built in steps", "req := rc.Patch(pt).Name(n)\nreq = req.SubResource(\"status\")\nreq.Body(b).Do(ctx)", 1},
		{"rest verb", `rc.Verb("PUT").Name(n).Do(ctx)`, 1},
		{"two writes", "c.Create(ctx, a, o)\nc.Delete(ctx, n, o)", 2},
		{"typed get", `kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})`, 0},
		{"rest get", `rc.Get().Resource("namespaces").Do(ctx)`, 0},
		{"rest read verb", `rc.Verb("GET").Do(ctx)`, 0},
		{"the delete builtin on a map", `delete(m, k)`, 0},
		{"a sync.Map's Delete", `m.Delete(k)`, 0},
		{"slices.Delete", `s = slices.Delete(s, i, i+1)`, 0},
		{"a Delete whose first argument is no context", `cache.Delete(name, opts)`, 0},
		{"a Patch of something else", `doc.Patch(name, p)`, 0},
		{"an HTTP post", `http.Post(url, "application/json", body)`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "package p\n\nfunc f() {\n" + tc.body + "\n}\n"
			f, err := parser.ParseFile(fset, tc.name+".go", src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			if got := mutatingCalls(f); len(got) != tc.want {
				t.Errorf("found %d mutating calls %q in %q, want %d", len(got), got, tc.body, tc.want)
			}
		})
	}
}

// TestOnlyWritersSendMutatingRequests keeps the mutating requests in one
// package, where dry run, preconditions and retries are decided once
// (cmd's own commands and doctor's access reviews aside).
func TestOnlyWritersSendMutatingRequests(t *testing.T) {
	sends := map[string]bool{}
	for _, f := range parseSources(t) {
		calls := mutatingCalls(f.ast)
		if len(calls) == 0 {
			continue
		}
		sends[f.pkg] = true
		if _, ok := writers[f.pkg]; !ok {
			for _, c := range calls {
				t.Errorf("%s sends a mutating API request: only %s may", c, strings.Join(slices.Sorted(maps.Keys(writers)), ", "))
			}
		}
	}
	for pkg, until := range writers {
		if until != "" && !sends[pkg] {
			t.Errorf("%s sends no mutating request any more: drop it from writers (%s)", pkg, until)
		}
	}
}

// sizes are what the bounds measure.
type sizes struct {
	pkgLines    map[string]int // package → lines of its non-test files
	funcLines   map[string]int // pkg.Func or pkg.Type.Method → lines from func to its closing brace
	typeMethods map[string]int // pkg.Type → methods declared on it
}

func measure(files []sourceFile) sizes {
	s := sizes{pkgLines: map[string]int{}, funcLines: map[string]int{}, typeMethods: map[string]int{}}
	for _, f := range files {
		s.pkgLines[f.pkg] += f.lines
		for _, d := range f.ast.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			key := f.pkg + "." + fn.Name.Name
			if fn.Recv != nil && len(fn.Recv.List) == 1 {
				typ := f.pkg + "." + receiverType(fn.Recv.List[0].Type)
				s.typeMethods[typ]++
				key = typ + "." + fn.Name.Name
			}
			if fn.Body != nil {
				s.funcLines[key] = fset.Position(fn.Body.Rbrace).Line - fset.Position(fn.Type.Func).Line + 1
			}
		}
	}
	return s
}

// receiverType is the name of a receiver's base type: T of *T, T[K] and
// (*T).
func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return fmt.Sprintf("%T", e)
		}
	}
}

// ratchet says what breaks a bound of measured: a size over its bound not
// in known, a size grown past its entry in known, and an entry of known
// (among those keys of measured) no longer over its bound.
func ratchet(measured map[string]int, bound func(key string) int, known map[string]int, unit string) []string {
	var broken []string
	for _, key := range slices.Sorted(maps.Keys(measured)) {
		size, limit := measured[key], bound(key)
		was, excepted := known[key]
		switch {
		case size > limit && !excepted:
			broken = append(broken, fmt.Sprintf("%s has %d %s, over its bound of %d", key, size, unit, limit))
		case size > limit && size > was:
			broken = append(broken, fmt.Sprintf("%s has %d %s, over its bound of %d and grown past the %d knownOver allows it", key, size, unit, limit, was))
		case size <= limit && excepted:
			broken = append(broken, fmt.Sprintf("%s has %d %s, within its bound of %d: drop it from knownOver", key, size, unit, limit))
		}
	}
	return broken
}

func TestRatchet(t *testing.T) {
	bound := func(string) int { return 10 }
	for _, tc := range []struct {
		name            string
		measured, known map[string]int
		want            int
	}{
		{"within bounds", map[string]int{"a": 10, "b": 3}, nil, 0},
		{"over and not known", map[string]int{"a": 11}, nil, 1},
		{"over and known", map[string]int{"a": 12}, map[string]int{"a": 12}, 0},
		{"over and shrunk", map[string]int{"a": 11}, map[string]int{"a": 12}, 0},
		{"over and grown", map[string]int{"a": 13}, map[string]int{"a": 12}, 1},
		{"known and back within", map[string]int{"a": 10}, map[string]int{"a": 12}, 1},
		{"known of another kind", map[string]int{"a": 3}, map[string]int{"b": 12}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ratchet(tc.measured, bound, tc.known, "lines"); len(got) != tc.want {
				t.Errorf("ratchet(%v, known %v) broke %d bounds %q, want %d", tc.measured, tc.known, len(got), got, tc.want)
			}
		})
	}
}

func measureSources(t *testing.T) sizes {
	t.Helper()
	return measure(parseSources(t))
}

// largest is the key of m with the largest value.
func largest(m map[string]int) (string, int) {
	var key string
	for k, v := range m {
		if v > m[key] || v == m[key] && k < key {
			key = k
		}
	}
	return key, m[key]
}

func TestMethodsPerType(t *testing.T) {
	s := measureSources(t)
	for _, b := range ratchet(s.typeMethods, func(string) int { return maxMethods }, knownOver, "methods") {
		t.Error(b)
	}
	typ, n := largest(s.typeMethods)
	t.Logf("the type with the most methods: %s, %d", typ, n)
}

func TestFunctionLines(t *testing.T) {
	s := measureSources(t)
	for _, b := range ratchet(s.funcLines, func(string) int { return maxFuncLines }, knownOver, "lines") {
		t.Error(b)
	}
	// An entry that names no package, function or type any more is left
	// over from a rename or a move.
	for key := range knownOver {
		_, p := s.pkgLines[key]
		_, f := s.funcLines[key]
		_, m := s.typeMethods[key]
		if !p && !f && !m {
			t.Errorf("knownOver has %s, which names no package, function or type: drop it", key)
		}
	}
	fn, n := largest(s.funcLines)
	t.Logf("the longest function: %s, %d lines", fn, n)
}

func TestPackageLines(t *testing.T) {
	s := measureSources(t)
	bound := func(pkg string) int {
		if pkg == "sweep" {
			return maxSweepLines
		}
		return maxPkgLines
	}
	for _, b := range ratchet(s.pkgLines, bound, knownOver, "lines") {
		t.Error(b)
	}
	total := 0
	for _, pkg := range slices.Sorted(maps.Keys(s.pkgLines)) {
		t.Logf("%-18s %6d lines", pkg, s.pkgLines[pkg])
		total += s.pkgLines[pkg]
	}
	t.Logf("%-18s %6d lines", "total", total)
}
