package layout

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/nsman/nsman/internal/workload"
)

// kindHomes are the files that may name a particular workload kind or
// way: each kind's home and the registry in internal/workload,
// policy/kinds.go, which declares the names the parser knows, and
// clustertest's discovery, a fake API server's fixture. Not the other
// homes of TestParticularsStayHome: an action's home asks a kind's Way, as
// any code outside internal/workload does.
var kindHomes = []string{"internal/workload/*.go", "policy/kinds.go", "internal/cluster/clustertest/discovery.go"}

func kindHome(file string) bool {
	return slices.ContainsFunc(kindHomes, func(pattern string) bool {
		ok, err := path.Match(pattern, file)
		return err == nil && ok
	})
}

// wayEnum are the names of the ways before each had a home.
var wayEnum = regexp.MustCompile(`^Way(Replicas|Suspend|Pause)$`)

// kindWords are what names a particular registered kind when spelled out
// in code: its name and its resource, and the resources the registry
// grants.
func kindWords() []string {
	var out []string
	for _, k := range workload.Kinds() {
		out = append(out, k.Name, k.Resource.Resource)
	}
	for _, p := range workload.Permissions() {
		out = append(out, p.Resource)
	}
	return out
}

// literal is the value of a string literal, "" for any other expression.
func literal(e ast.Expr) string {
	lit, ok := ast.Unparen(e).(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return ""
	}
	s, _ := strconv.Unquote(lit.Value)
	return s
}

// isWay reports whether e is a kind's way (x.Way), or a particular way
// named (workload.Replicas).
func isWay(e ast.Expr) bool {
	sel, ok := ast.Unparen(e).(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, _ := sel.X.(*ast.Ident)
	return sel.Sel.Name == "Way" || pkg != nil && pkg.Name == "workload" && sel.Sel.Name == "Replicas"
}

// namedKinds finds where f names a particular way or kind in a way
// TestParticularsStayHome does not count (it counts policy's constants of
// the kinds): an identifier of the ways' old enum, a particular way named,
// a kind's name or resource spelled out, or a branch on a kind's way (a
// comparison, or a type switch).
func namedKinds(f *ast.File, words []string) []string {
	var found []string
	at := func(n ast.Node, what string) {
		found = append(found, fmt.Sprintf("%s: %s", fset.Position(n.Pos()), what))
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			if wayEnum.MatchString(n.Name) {
				at(n, n.Name)
			}
		case *ast.SelectorExpr:
			if pkg, ok := n.X.(*ast.Ident); ok && pkg.Name == "workload" && n.Sel.Name == "Replicas" {
				at(n, "workload.Replicas")
			}
		case *ast.BasicLit:
			if s := literal(n); s != "" && slices.Contains(words, s) {
				at(n, strconv.Quote(s))
			}
		case *ast.BinaryExpr:
			if (n.Op == token.EQL || n.Op == token.NEQ) && (isWay(n.X) || isWay(n.Y)) {
				at(n, "a way compared")
			}
		case *ast.TypeSwitchStmt:
			if a, ok := n.Assign.(*ast.ExprStmt); ok {
				if ta, ok := a.X.(*ast.TypeAssertExpr); ok && isWay(ta.X) {
					at(n, "a switch on a way's type")
				}
			}
			if a, ok := n.Assign.(*ast.AssignStmt); ok && len(a.Rhs) == 1 {
				if ta, ok := a.Rhs[0].(*ast.TypeAssertExpr); ok && isWay(ta.X) {
					at(n, "a switch on a way's type")
				}
			}
		}
		return true
	})
	return found
}

func TestKindDetector(t *testing.T) {
	words := []string{"Deployment", "deployments", "CronJob", "cronjobs"}
	for _, tc := range []struct {
		name, body string
		want       int
	}{
		{"a way of the old enum", "switch kind.Way {\ncase probe.WaySuspend:\n}", 1},
		{"a way compared", `if kind.Way == workload.Scale {}`, 1},
		{"a particular way named", `w := workload.Replicas`, 1},
		{"a switch on a way's type", "switch kind.Way.(type) {\n}", 1},
		{"a switch on a way's type, bound", "switch w := kind.Way.(type) {\ncase nil:\n_ = w\n}", 1},
		{"a kind spelled out", `if w.Kind == "CronJob" {}`, 1},
		{"a resource spelled out", `r := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}`, 1},
		{"a way asked", `if kind.Way.FreesPods() {}`, 0},
		{"a way called", `patch, _ := kind.Way.Sleep(id, w)`, 0},
		{"a kind in a message", `err := errors.New("no Deployment here")`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "package p\n\nfunc f() {\n" + tc.body + "\n}\n"
			f, err := parser.ParseFile(fset, tc.name+".go", src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			if got := namedKinds(f, words); len(got) != tc.want {
				t.Errorf("found %d kinds named %q in %q, want %d", len(got), got, tc.body, tc.want)
			}
		})
	}
}

// TestOnlyKindHomesNameAKind keeps each workload kind in its home: code
// outside kindHomes that names a particular way or spells a kind's name or
// resource, or branches on a way, fails, as an upward import does
// (TestParticularsStayHome counts policy's constants of the kinds).
func TestOnlyKindHomesNameAKind(t *testing.T) {
	words := kindWords()
	if len(words) == 0 {
		t.Fatal("no kind registered: the test would check nothing")
	}
	for _, f := range parseSources(t) {
		if kindHome(f.path) {
			continue
		}
		for _, at := range namedKinds(f.ast, words) {
			t.Errorf("%s names a particular workload kind outside its home: ask the kind's registered Way (internal/workload) instead", at)
		}
	}
}
