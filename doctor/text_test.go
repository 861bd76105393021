package doctor

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every check Run makes, as its source names it, has what it looks at in
// About, the wide report's ABOUT column, and About names no other.
func TestAboutEveryCheck(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile(`Check\{Name: "(\w+)"|^\s+Name:\s+"(\w+)",`)
	checks := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(src), "\n") {
			if m := named.FindStringSubmatch(line); m != nil {
				checks[m[1]+m[2]] = true
			}
		}
	}
	if len(checks) < 9 {
		t.Fatalf("found the checks %v in the source, want the 9 of Check.Name", checks)
	}
	for name := range checks {
		if About[name] == "" {
			t.Errorf("check %s has nothing in About", name)
		}
	}
	for name := range About {
		if !checks[name] {
			t.Errorf("About names %s, which no check is", name)
		}
	}
}

// -o name lists each check that did not pass, failed or warned, in order.
func TestNames(t *testing.T) {
	r := Report{Checks: []Check{{Name: "a", Status: OK}, {Name: "b", Status: Failed}, {Name: "c", Status: Warning}, {Name: "d", Status: OK}}}
	if got := strings.Join(r.Names(), " "); got != "check/b check/c" {
		t.Errorf("names %q, want check/b check/c", got)
	}
}
