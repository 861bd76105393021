package roots

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func TestNeeded(t *testing.T) {
	dir := t.TempDir()
	bundleFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(bundleFile, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	emptyDir, fullDir := filepath.Join(dir, "none"), filepath.Join(dir, "certs")
	for _, d := range []string{emptyDir, fullDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(fullDir, "a.pem"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	nothing := func(string) bool { return false }
	for _, c := range []struct {
		name      string
		goos      string
		env       map[string]string
		holds     func(string) bool
		wantNeeds bool
	}{
		{"linux, no bundle anywhere", "linux", nil, nothing, true},
		{"linux, Debian's bundle", "linux", nil, func(p string) bool { return p == "/etc/ssl/certs/ca-certificates.crt" }, false},
		{"linux, Alpine's bundle", "linux", nil, func(p string) bool { return p == "/etc/ssl/cert.pem" }, false},
		{"linux, a directory of certificates", "linux", nil, func(p string) bool { return p == "/etc/pki/tls/certs" }, false},
		{"SSL_CERT_FILE in place of the usual files", "linux", map[string]string{"SSL_CERT_FILE": bundleFile}, holds, false},
		{"SSL_CERT_FILE empty, SSL_CERT_DIR missing", "linux", map[string]string{"SSL_CERT_FILE": empty, "SSL_CERT_DIR": missing}, holds, true},
		{"SSL_CERT_FILE missing, SSL_CERT_DIR empty", "linux", map[string]string{"SSL_CERT_FILE": missing, "SSL_CERT_DIR": emptyDir}, holds, true},
		{"SSL_CERT_DIR a list, one with a certificate", "linux", map[string]string{"SSL_CERT_FILE": missing, "SSL_CERT_DIR": emptyDir + ":" + fullDir}, holds, false},
		{"darwin asks the platform", "darwin", nil, nothing, false},
		{"windows asks the platform", "windows", nil, nothing, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			getenv := func(k string) string { return c.env[k] }
			if got := needed(c.goos, getenv, c.holds); got != c.wantNeeds {
				t.Errorf("needed = %v, want %v", got, c.wantNeeds)
			}
		})
	}
}

// The bundle parses: every root of it in the pool.
func TestPool(t *testing.T) {
	if pool().Equal(x509.NewCertPool()) {
		t.Fatal("the bundle's pool is empty")
	}
}

// In a process whose system has no roots, Install gives crypto/x509 the
// bundle; where the system has them, it leaves Go's own. Run in children:
// crypto/x509 takes fallback roots once per process.
func TestInstall(t *testing.T) {
	if os.Getenv("NSMAN_ROOTS_CHILD") == "1" {
		Install()
		system, err := x509.SystemCertPool()
		if err != nil || system.Equal(x509.NewCertPool()) {
			os.Exit(3) // no roots
		}
		if system.Equal(pool()) {
			os.Exit(4) // the bundle's
		}
		os.Exit(5) // the system's
	}
	dir := t.TempDir()
	run := func(env ...string) int {
		cmd := exec.Command(os.Args[0], "-test.run=^TestInstall$")
		cmd.Env = append(os.Environ(), append(env, "NSMAN_ROOTS_CHILD=1")...)
		err := cmd.Run()
		if exit, ok := err.(*exec.ExitError); ok {
			return exit.ExitCode()
		}
		t.Fatalf("child: %v", err)
		return 0
	}
	if got := run("SSL_CERT_FILE="+filepath.Join(dir, "none.pem"), "SSL_CERT_DIR="+filepath.Join(dir, "none")); got != 4 {
		t.Errorf("no roots on the system: child exited %d, want 4 (the bundle's roots)", got)
	}
	own := filepath.Join(dir, "own.pem")
	if err := os.WriteFile(own, selfSigned(t), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := run("SSL_CERT_FILE="+own, "SSL_CERT_DIR="+filepath.Join(dir, "none")); got != 5 {
		t.Errorf("a root on the system: child exited %d, want 5 (left to the system)", got)
	}
}

// selfSigned is a CA certificate in PEM.
func selfSigned(t *testing.T) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "nsman test root"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
