package layout

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// particular are, by the package that declares them, the names of the
// particular conditions, actions, workload kinds and notification formats:
// code outside their homes (see home) that names one branches on it, or
// soon will, and adding one means finding every such place. Issue 45 gave
// each a home behind one interface, registered once; issue 48 the formats.
var particular = map[string][]string{
	"policy": {
		"ConditionTTL", "ConditionPodsSucceed", "ConditionPodsFailed", "ConditionExpires", "ConditionIdle", "ConditionOwnerGone",
		"ActionDelete", "ActionScaleDown", "ActionWebhook", "ActionSleep",
		"KindDeployment", "KindStatefulSet", "KindCronJob", "KindScaledObject",
	},
	"internal/tell": {"NotifyJSON", "NotifySlack", "NotifyTeams", "NotifyGoogleChat"},
}

// spelled are the values of those names, as a manifest spells them: a
// comparison or a case outside a home that spells one branches on it as
// much as one that names it.
var spelled = []string{"TTL", "PODS_SUCCEED", "PODS_FAILED", "EXPIRES", "IDLE", "OWNER_GONE", "DELETE", "SCALE_DOWN", "WEBHOOK", "SLEEP"}

// homes are the files that may name a particular condition, action, kind
// or notification format: where each is declared, its home and its
// registry.
var homes = []string{
	"policy/types.go",
	"policy/actions.go", "policy/action_*.go", "internal/execute/actions.go", "internal/execute/action_*.go",
	"policy/kinds.go", "internal/workload/*.go",
	"policy/conditions.go", "policy/condition_*.go",
	"internal/tell/format.go", "internal/tell/format_*.go",
}

func home(file string) bool {
	return slices.ContainsFunc(homes, func(pattern string) bool {
		ok, err := path.Match(pattern, file)
		return err == nil && ok
	})
}

// unhomed are the files outside the homes that still name a particular
// condition, action or kind, each with how many times it did when
// recorded. A count that grows, a file not listed, and an entry the file
// no longer needs (or no longer needs as much) all fail: the list only
// shrinks, to nothing once every condition, action and kind is in its
// home (issue 45).
var unhomed = map[string]int{}

// particularNames counts, per file outside the homes, the references to a
// particular name (policy.ActionDelete, or ActionDelete inside policy,
// its declaration aside) and the comparisons and cases that spell one.
func particularNames(files []sourceFile) map[string]int {
	counts := map[string]int{}
	for _, f := range files {
		if home(f.path) {
			continue
		}
		n := 0
		ast.Inspect(f.ast, func(node ast.Node) bool {
			switch x := node.(type) {
			case *ast.ValueSpec:
				// A declaration's names are not references; its values are.
				for _, v := range x.Values {
					n += namesIn(f.pkg, v)
				}
				if x.Type != nil {
					n += namesIn(f.pkg, x.Type)
				}
				return false
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok && declares(id.Name, x.Sel.Name, f.pkg, true) {
					n++
				}
				return false
			case *ast.Ident:
				if declares("", x.Name, f.pkg, false) {
					n++
				}
			case *ast.BinaryExpr:
				if x.Op == token.EQL || x.Op == token.NEQ {
					n += spells(x.X) + spells(x.Y)
				}
			case *ast.CaseClause:
				for _, e := range x.List {
					n += spells(e)
				}
			}
			return true
		})
		if n > 0 {
			counts[f.path] = n
		}
	}
	return counts
}

// namesIn counts the particular names referenced in node, as
// particularNames does.
func namesIn(pkg string, node ast.Node) int {
	n := 0
	ast.Inspect(node, func(node ast.Node) bool {
		switch x := node.(type) {
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok && declares(id.Name, x.Sel.Name, pkg, true) {
				n++
			}
			return false
		case *ast.Ident:
			if declares("", x.Name, pkg, false) {
				n++
			}
		}
		return true
	})
	return n
}

// declares reports whether name, qualified by qualifier (the package's
// name, when selected) or bare inside package pkg, is a particular name.
func declares(qualifier, name, pkg string, selected bool) bool {
	for declaring, names := range particular {
		if !slices.Contains(names, name) {
			continue
		}
		if selected && qualifier == path.Base(declaring) || !selected && pkg == declaring {
			return true
		}
	}
	return false
}

// spells reports, as 1 or 0, whether e is a string literal that spells a
// particular condition or action.
func spells(e ast.Expr) int {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return 0
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil || !slices.Contains(spelled, s) {
		return 0
	}
	return 1
}

// TestParticularsStayHome fails when code outside a home names a
// particular condition, action or workload kind more than unhomed allows,
// as TestImportsGoOneWay fails on an upward import.
func TestParticularsStayHome(t *testing.T) {
	counts := particularNames(parseSources(t))
	for _, b := range ratchet(counts, func(string) int { return 0 }, unhomed, "references to a particular condition, action or kind outside its home") {
		t.Error(b)
	}
	// An entry of a file that no longer exists is left over.
	files := map[string]bool{}
	for _, f := range parseSources(t) {
		files[f.path] = true
	}
	// An entry the file no longer needs, or needs less of, is left over:
	// the ratchet above reads only the files that still name one.
	for file, was := range unhomed {
		switch n := counts[file]; {
		case !files[file]:
			t.Errorf("unhomed has %s, which is no file of nsman's: drop it", file)
		case n == 0:
			t.Errorf("unhomed has %s, which names no particular condition, action or kind any more: drop it", file)
		case n < was:
			t.Errorf("unhomed allows %s %d references, and it has %d: lower its entry", file, was, n)
		}
	}
	total, lines := 0, []string{}
	for file, n := range counts {
		total += n
		lines = append(lines, fmt.Sprintf("%s %d", file, n))
	}
	slices.Sort(lines)
	t.Logf("outside the homes, %d references in %d files: %s", total, len(counts), strings.Join(lines, ", "))
}

// The detector counts what it should, and nothing else.
func TestParticularNamesDetector(t *testing.T) {
	for _, tc := range []struct {
		name, pkg, src string
		want           int
	}{
		{"selected outside policy", "internal/execute", `package execute; func f(t string) bool { return t == policy.ActionDelete }`, 1},
		{"bare inside policy", "policy", `package policy; func f(t string) bool { return t == ActionSleep }`, 1},
		{"bare outside policy is another name", "internal/execute", `package execute; func f(t string) bool { return t == ActionSleep }`, 0},
		{"a case that spells one", "sweep", `package sweep; func f(t string) { switch t { case "WEBHOOK": } }`, 1},
		{"a comparison that spells one", "sweep", `package sweep; func f(t string) bool { return "IDLE" != t }`, 1},
		{"a message that spells one", "sweep", `package sweep; var s = "DELETE"`, 0},
		{"a declaration", "policy", `package policy; const ActionLabel, ActionSleep = "LABEL", "SLEEP"`, 0},
		{"a value that names one", "policy", `package policy; var all = []string{ActionDelete, ConditionTTL}`, 2},
		{"a map key", "internal/probe", `package probe; var m = map[string]int{policy.KindCronJob: 1}`, 1},
		{"another package's name", "sweep", `package sweep; var x = execute.ActionDelete`, 0},
		{"a format outside its home", "sweep", `package sweep; func f(c Config) bool { return c.NotifyFormat == tell.NotifySlack }`, 1},
		{"a format bare in tell, outside its home", "internal/tell", `package tell; var f = NotifyTeams`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parseSource(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			file := tc.pkg + "/x.go"
			if got := particularNames([]sourceFile{{pkg: tc.pkg, path: file, ast: f}})[file]; got != tc.want {
				t.Errorf("%d references, want %d", got, tc.want)
			}
		})
	}
}

func parseSource(src string) (*ast.File, error) {
	return parser.ParseFile(fset, "x.go", src, parser.SkipObjectResolution)
}
