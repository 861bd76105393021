package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The binary carries what its image's base lacks: the IANA time-zone
// database (policies' windows name time zones; distroless static has no
// /usr/share/zoneinfo) and fallback root certificates.
func TestBinaryCarriesWhatTheImageLacks(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, want := range []string{"time/tzdata", "golang.org/x/crypto/x509roots/fallback"} {
		if !slices.Contains(deps, want) {
			t.Errorf("nsman does not link %s", want)
		}
	}
}
