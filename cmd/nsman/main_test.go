package main

import (
	"debug/elf"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The binary carries what its image's base lacks: the IANA time-zone
// database (policies' windows name time zones; distroless static has no
// /usr/share/zoneinfo) and fallback root certificates, the bundle that
// internal/roots parses only where the system has none, not
// x509roots/fallback, which parses it in every process.
func TestBinaryCarriesWhatTheImageLacks(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, want := range []string{"time/tzdata", "golang.org/x/crypto/x509roots/fallback/bundle"} {
		if !slices.Contains(deps, want) {
			t.Errorf("nsman does not link %s", want)
		}
	}
	if slices.Contains(deps, "golang.org/x/crypto/x509roots/fallback") {
		t.Error("nsman links golang.org/x/crypto/x509roots/fallback, whose init parses the bundle in every process: internal/roots installs it where needed")
	}
}

// The linker drops the methods nothing calls, unless a template is
// executed: text/template finds methods by name at run time, so the linker
// keeps every exported method of every type, and client-go has many. nsman
// executes none (serve writes its page itself; --version is RunE's): with
// one, the binary was 28 MB larger and each sweep's RSS 11 MiB.
func TestBinaryExecutesNoTemplate(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "nsman")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	var linked, executes []string
	for _, s := range syms {
		if strings.HasPrefix(s.Name, "text/template.") {
			linked = append(linked, s.Name)
		}
		if strings.HasPrefix(s.Name, "text/template.(*state).") {
			executes = append(executes, s.Name)
		}
	}
	if len(linked) == 0 {
		t.Fatal("no symbol of text/template in the binary: cobra links it, so the check is not looking at the right symbols")
	}
	if len(executes) > 0 {
		t.Errorf("the binary executes a template (%s): something calls Template.Execute, cobra's SetVersionTemplate, SetUsageTemplate or SetHelpTemplate, or html/template", strings.Join(executes[:min(3, len(executes))], ", "))
	}
}
