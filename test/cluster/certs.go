package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the key material of one control plane: a CA, the API server's serving
// certificate signed by it, and the key that signs ServiceAccount tokens.
type pki struct {
	caPEM                   []byte
	servingCert, servingKey string
	serviceAccountKey       string
}

// writePKI generates fresh keys into dir. Nothing is reused between control
// planes, so a token or certificate from one never works against another.
func writePKI(dir string) (pki, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return pki{}, err
	}
	now := time.Now()
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "nsman-test-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return pki{}, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return pki{}, err
	}

	servingKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return pki{}, err
	}
	servingDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")},
	}, ca, &servingKey.PublicKey, caKey)
	if err != nil {
		return pki{}, err
	}

	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return pki{}, err
	}

	p := pki{
		caPEM:             pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		servingCert:       filepath.Join(dir, "apiserver.crt"),
		servingKey:        filepath.Join(dir, "apiserver.key"),
		serviceAccountKey: filepath.Join(dir, "service-account.key"),
	}
	servingPEM := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: servingDER}), p.caPEM...)
	if err := os.WriteFile(p.servingCert, servingPEM, 0o600); err != nil {
		return pki{}, err
	}
	if err := writeECKey(p.servingKey, servingKey); err != nil {
		return pki{}, err
	}
	if err := writeECKey(p.serviceAccountKey, saKey); err != nil {
		return pki{}, err
	}
	return p, nil
}

func writeECKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}
