package nsmantest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// A tenant's webhook reaches a Service of its own namespace at the
// Service's ClusterIP. No kube-proxy routes a ClusterIP here; a Service
// CIDR in loopback space does: nsman dials the ClusterIP, and the host
// delivers it to the Receiver listening there.

// LoopbackServiceCIDR is the Service CIDR the tests' receiver Services
// take their ClusterIPs from.
var LoopbackServiceCIDR = netip.MustParsePrefix("127.77.0.0/16")

var (
	serviceCIDRs sync.Map // kubernetes.Interface → error, once per cluster
	nextIP       sync.Mutex
	lastIP       = LoopbackServiceCIDR.Addr().Next()
)

// ensureLoopbackCIDR creates the loopback ServiceCIDR, once per cluster,
// and waits until a Service may take an address of it.
func ensureLoopbackCIDR(ctx context.Context, admin kubernetes.Interface) error {
	once, _ := serviceCIDRs.LoadOrStore(admin, &sync.Once{})
	var err error
	once.(*sync.Once).Do(func() {
		cidr := &networkingv1.ServiceCIDR{
			ObjectMeta: metav1.ObjectMeta{Name: "nsman-test-loopback"},
			Spec:       networkingv1.ServiceCIDRSpec{CIDRs: []string{LoopbackServiceCIDR.String()}},
		}
		if _, err = admin.NetworkingV1().ServiceCIDRs().Create(ctx, cidr, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
			err = nil
		}
	})
	return err
}

// allocate returns a loopback address of the CIDR no Receiver of this
// process listens on yet.
func allocate() (netip.Addr, error) {
	nextIP.Lock()
	defer nextIP.Unlock()
	lastIP = lastIP.Next()
	if !LoopbackServiceCIDR.Contains(lastIP) {
		return netip.Addr{}, fmt.Errorf("the loopback Service CIDR %s is used up", LoopbackServiceCIDR)
	}
	return lastIP, nil
}

// ServiceURL makes the Receiver reachable as Service name of namespace ns
// (once; a second call returns the same URL):
// it listens on a new loopback address, which the Service has as its
// ClusterIP, on the Service's port. It returns the URL a manager of ns
// names it by: http://<name>.<ns>.svc.cluster.local:<port>.
func (r *Receiver) ServiceURL(t testing.TB, admin kubernetes.Interface, ns, name string) string {
	t.Helper()
	r.mu.Lock()
	url, ok := r.services[ns+"/"+name]
	r.mu.Unlock()
	if ok {
		return url
	}
	l := listenLoopback(t)
	srv := &http.Server{Handler: r.handler, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	url = loopbackService(t, admin, ns, name, l.Addr().(*net.TCPAddr))
	r.mu.Lock()
	if r.services == nil {
		r.services = map[string]string{}
	}
	r.services[ns+"/"+name] = url
	r.mu.Unlock()
	return url
}

// SilentServiceURL is the URL of a Service name of namespace ns whose
// ClusterIP and port nothing listens on.
func SilentServiceURL(t testing.TB, admin kubernetes.Interface, ns, name string) string {
	t.Helper()
	l := listenLoopback(t)
	addr := l.Addr().(*net.TCPAddr)
	_ = l.Close()
	return loopbackService(t, admin, ns, name, addr)
}

// ServeAsService serves h as Service name of namespace ns, as ServiceURL
// does a Receiver: for handlers of a test's own (hostile receivers, say).
// With tlsConfig it serves TLS (see StartAsService). It returns the URL a
// manager of ns names it by.
func ServeAsService(t testing.TB, admin kubernetes.Interface, ns, name string, h http.Handler, tlsConfig *tls.Config) string {
	t.Helper()
	return StartAsService(t, admin, ns, name, &http.Server{Handler: h, TLSConfig: tlsConfig, ReadHeaderTimeout: 10 * time.Second})
}

// StartAsService starts srv, stopped when t ends, on a new address of
// LoopbackServiceCIDR and makes it Service name of namespace ns, whose
// ClusterIP and port that address is; the caller may set anything of srv
// but its listener (ConnState, to count connections, say). With
// srv.TLSConfig set it serves TLS, and the URL is https; a TLSConfig
// without a certificate gets one issued to the Service's names
// (<name>.<ns>.svc[.cluster.local]) by a CA of its own that nobody trusts,
// as httptest's is: nsman refuses it for want of a trusted issuer, not for
// a name that does not match. It returns the URL a manager of ns names it
// by: http(s)://<name>.<ns>.svc.cluster.local:<port>.
func StartAsService(t testing.TB, admin kubernetes.Interface, ns, name string, srv *http.Server) string {
	t.Helper()
	l := listenLoopback(t)
	scheme := "http"
	if srv.TLSConfig != nil {
		scheme = "https"
		if len(srv.TLSConfig.Certificates) == 0 && srv.TLSConfig.GetCertificate == nil {
			srv.TLSConfig = srv.TLSConfig.Clone()
			srv.TLSConfig.Certificates = []tls.Certificate{selfSigned(t, name+"."+ns+".svc", name+"."+ns+".svc.cluster.local")}
		}
		go func() { _ = srv.ServeTLS(l, "", "") }()
	} else {
		go func() { _ = srv.Serve(l) }()
	}
	t.Cleanup(func() { _ = srv.Close() })
	url := loopbackService(t, admin, ns, name, l.Addr().(*net.TCPAddr))
	return scheme + strings.TrimPrefix(url, "http")
}

// selfSigned is a certificate for names, signed by a key of its own.
func selfSigned(t testing.TB, names ...string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: names[0]},
		DNSNames:              names,
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// listenLoopback listens on a new address of LoopbackServiceCIDR.
func listenLoopback(t testing.TB) net.Listener {
	t.Helper()
	ip, err := allocate()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", netip.AddrPortFrom(ip, 0).String())
	if err != nil {
		t.Fatalf("listen on %s: %v", ip, err)
	}
	return l
}

// loopbackService creates Service name of namespace ns with addr's IP as
// its ClusterIP and its port, and returns its URL.
func loopbackService(t testing.TB, admin kubernetes.Interface, ns, name string, addr *net.TCPAddr) string {
	t.Helper()
	ctx := t.Context()
	if err := ensureLoopbackCIDR(ctx, admin); err != nil {
		t.Fatalf("create the loopback ServiceCIDR: %v", err)
	}
	// A manifest played out may name its namespace before it is applied.
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			ClusterIP: addr.IP.String(),
			Ports:     []corev1.ServicePort{{Name: "http", Port: int32(addr.Port), Protocol: corev1.ProtocolTCP}},
			// nsman dials only a Service with a selector; none of its
			// Pods need exist, since the receiver listens on the ClusterIP.
			Selector: map[string]string{"app.kubernetes.io/name": name},
		},
	}
	// The ServiceCIDR is usable once the API server's allocator has seen it.
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, last = admin.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
		if apierrors.IsInvalid(last) {
			return false, nil
		}
		return last == nil, last
	})
	if err != nil {
		t.Fatalf("create Service %s/%s at %s: %v (last: %v)", ns, name, addr.IP, err, last)
	}
	return "http://" + name + "." + ns + ".svc.cluster.local:" + strconv.Itoa(addr.Port)
}

// serves reports whether the Receiver is reachable as Service name of
// namespace ns (see ServiceURL).
func (r *Receiver) serves(ns, name string) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.services[ns+"/"+name]
	return ok
}
