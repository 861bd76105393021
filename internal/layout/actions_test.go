package layout

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/nsman/nsman/policy"
)

// actionHomes are the files that may name a particular action type: each
// action's home and registry in policy and in internal/execute, and
// policy/types.go, which declares the types' constants. Code elsewhere asks
// the registered properties (policy.ActionKind) instead, so that adding
// an action is adding its homes (docs/design.md, "Adding an action").
var actionHomes = regexp.MustCompile(`^(policy/(actions|action_[a-z_]+|types)|internal/execute/(actions|action_[a-z_]+))\.go$`)

// actionConstants are the names of the constants package policy declares
// for the registered action types.
func actionConstants(files []sourceFile) map[string]bool {
	names := map[string]bool{}
	for _, f := range files {
		if f.pkg != "policy" {
			continue
		}
		ast.Inspect(f.ast, func(n ast.Node) bool {
			spec, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, name := range spec.Names {
				if i < len(spec.Values) && slices.Contains(policy.ActionTypes(), stringOfLit(spec.Values[i])) {
					names[name.Name] = true
				}
			}
			return true
		})
	}
	return names
}

// stringOfLit is the value of a string literal, "" for any other expression.
func stringOfLit(e ast.Expr) string {
	lit, ok := ast.Unparen(e).(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return ""
	}
	s, _ := strconv.Unquote(lit.Value)
	return s
}

// namedActions finds where f names a particular action: an identifier of
// one of constants, or an action type spelled out in a comparison or a
// switch's case.
func namedActions(f *ast.File, constants map[string]bool) []string {
	var found []string
	named := func(e ast.Expr) {
		if s := stringOfLit(e); slices.Contains(policy.ActionTypes(), s) {
			found = append(found, fmt.Sprintf("%s: %q", fset.Position(e.Pos()), s))
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			if constants[n.Name] {
				found = append(found, fmt.Sprintf("%s: %s", fset.Position(n.Pos()), n.Name))
			}
		case *ast.BinaryExpr:
			if n.Op == token.EQL || n.Op == token.NEQ {
				named(n.X)
				named(n.Y)
			}
		case *ast.CaseClause:
			for _, e := range n.List {
				named(e)
			}
		}
		return true
	})
	return found
}

func TestActionDetector(t *testing.T) {
	constants := map[string]bool{"ActionDelete": true, "ActionSleep": true}
	for _, tc := range []struct {
		name, body string
		want       int
	}{
		{"a constant compared", `if p.Action.Type == policy.ActionDelete {}`, 1},
		{"a constant in a case", "switch t {\ncase policy.ActionSleep, policy.ActionDelete:\n}", 2},
		{"a constant in package policy", `ok := a.Type != ActionSleep`, 1},
		{"a constant as a value", `a := policy.Action{Type: policy.ActionSleep}`, 1},
		{"a type spelled out, compared", `if e.Action == "DELETE" {}`, 1},
		{"a type spelled out in a case", "switch t {\ncase \"WEBHOOK\":\n}", 1},
		{"a property asked", `if p.Action.Kind().RemovesTarget() {}`, 0},
		{"a type spelled out in a message", `err := errors.New("not a SLEEP")`, 0},
		{"a type as data", `why := "DELETE"`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "package p\n\nfunc f() {\n" + tc.body + "\n}\n"
			f, err := parser.ParseFile(fset, tc.name+".go", src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			if got := namedActions(f, constants); len(got) != tc.want {
				t.Errorf("found %d actions named %q in %q, want %d", len(got), got, tc.body, tc.want)
			}
		})
	}
}

// TestOnlyActionHomesNameAnAction keeps each action in its homes: code
// outside them that branches on, or names, a particular action type fails,
// as an upward import does.
func TestOnlyActionHomesNameAnAction(t *testing.T) {
	files := parseSources(t)
	constants := actionConstants(files)
	if len(constants) != len(policy.ActionTypes()) {
		t.Fatalf("found constants %v for the action types %v: the test would check nothing", constants, policy.ActionTypes())
	}
	for _, f := range files {
		if actionHomes.MatchString(f.path) {
			continue
		}
		for _, at := range namedActions(f.ast, constants) {
			t.Errorf("%s names a particular action outside its homes: ask its properties (policy.ActionKind) instead", at)
		}
	}
}
