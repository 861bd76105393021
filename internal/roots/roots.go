// Package roots gives crypto/x509 the root certificates of
// golang.org/x/crypto's bundle as fallback roots, where the system has no
// CA bundle: nsman's image must not depend on its base carrying one
// (scratch has none; distroless static has one today), and a sweep that
// cannot verify a webhook's server fails every time. main calls Install
// before anything else.
package roots

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// Install sets the bundle as crypto/x509's fallback roots unless the system
// has a CA bundle where Go's loader looks for one. The bundle is parsed
// only then: x509roots/fallback parses it in every process, which cost each
// sweep about 3 ms of CPU and 1 MiB of heap held to its end.
func Install() {
	if !needed(runtime.GOOS, os.Getenv, holds) {
		return
	}
	x509.SetFallbackRoots(pool())
}

// Where Go's loader reads a Linux system's roots (crypto/x509's
// root_linux.go and root_unix.go): SSL_CERT_FILE and SSL_CERT_DIR, when
// set, in place of these.
var (
	certFiles = []string{
		"/etc/ssl/certs/ca-certificates.crt",
		"/etc/pki/tls/certs/ca-bundle.crt",
		"/etc/ssl/ca-bundle.pem",
		"/etc/pki/tls/cacert.pem",
		"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
		"/etc/ssl/cert.pem",
	}
	certDirectories = []string{"/etc/ssl/certs", "/etc/pki/tls/certs"}
)

// needed says whether the fallback roots may be used: on Linux, where every
// file and directory Go's loader reads is missing or empty. Elsewhere Go
// asks the platform's verifier, which never uses fallback roots.
func needed(goos string, getenv func(string) string, holds func(string) bool) bool {
	if goos != "linux" {
		return false
	}
	files, dirs := certFiles, certDirectories
	if f := getenv("SSL_CERT_FILE"); f != "" {
		files = []string{f}
	}
	if d := getenv("SSL_CERT_DIR"); d != "" {
		dirs = filepath.SplitList(d)
	}
	for _, p := range append(files, dirs...) {
		if holds(p) {
			return false
		}
	}
	return true
}

// holds says whether path is a file that is not empty or a directory with
// an entry: what may hold roots.
func holds(path string) bool {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return false
	case !fi.IsDir():
		return fi.Size() > 0
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	names, _ := f.Readdirnames(1)
	return len(names) > 0
}

// pool parses the bundle into a CertPool, each root with its constraint.
func pool() *x509.CertPool {
	p := x509.NewCertPool()
	for c := range bundle.Roots() {
		cert, err := x509.ParseCertificate(c.Certificate)
		if err != nil {
			continue // a root that does not parse verifies nothing
		}
		if c.Constraint == nil {
			p.AddCert(cert)
		} else {
			p.AddCertWithConstraint(cert, c.Constraint)
		}
	}
	return p
}
