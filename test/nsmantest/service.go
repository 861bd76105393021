package nsmantest

import (
	"cmp"
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
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// A tenant's webhook reaches a Service of its own namespace at the ready
// endpoints of the Pods its selector picks. No kubelet runs those Pods
// here: a receiver listens on an address of this host that an endpoint may
// have (the API refuses loopback ones), and a Pod on a node no kubelet
// runs, its status written as a kubelet would (Running, Ready, that IP),
// is the Service's, with an EndpointSlice as the controller would write it.

// receiverIP is the address of this host that receivers listen on: the
// first global unicast address of its interfaces, IPv4 first.
var receiverIP = sync.OnceValues(func() (netip.Addr, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return netip.Addr{}, err
	}
	var found []netip.Addr
	for _, a := range addrs {
		p, err := netip.ParsePrefix(a.String())
		if err != nil || !p.Addr().IsGlobalUnicast() {
			continue
		}
		found = append(found, p.Addr().Unmap())
	}
	slices.SortStableFunc(found, func(a, b netip.Addr) int { return cmp.Compare(a.BitLen(), b.BitLen()) })
	if len(found) == 0 {
		return netip.Addr{}, fmt.Errorf("no global unicast address on this host's interfaces (%v): a Service's endpoint may not be a loopback address", addrs)
	}
	return found[0], nil
})

// ServiceURL makes the Receiver reachable as Service name of namespace ns
// (once; a second call returns the same URL):
// it listens on a new port of this host's address, which the Service's
// Pod has as its IP, on the Service's port. It returns the URL a manager of ns
// names it by: http://<name>.<ns>.svc.cluster.local:<port>.
func (r *Receiver) ServiceURL(t testing.TB, admin kubernetes.Interface, ns, name string) string {
	t.Helper()
	r.mu.Lock()
	url, ok := r.services[ns+"/"+name]
	r.mu.Unlock()
	if ok {
		return url
	}
	l := listenAsPod(t)
	srv := &http.Server{Handler: r.handler, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	url = podService(t, admin, ns, name, l.Addr().(*net.TCPAddr))
	r.mu.Lock()
	if r.services == nil {
		r.services = map[string]string{}
	}
	r.services[ns+"/"+name] = url
	r.mu.Unlock()
	return url
}

// SilentServiceURL is the URL of a Service name of namespace ns whose
// Pod's address and port nothing listens on.
func SilentServiceURL(t testing.TB, admin kubernetes.Interface, ns, name string) string {
	t.Helper()
	l := listenAsPod(t)
	addr := l.Addr().(*net.TCPAddr)
	_ = l.Close()
	return podService(t, admin, ns, name, addr)
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
// this host and makes it Service name of namespace ns, whose Pod's
// endpoint that address is; the caller may set anything of srv
// but its listener (ConnState, to count connections, say). With
// srv.TLSConfig set it serves TLS, and the URL is https; a TLSConfig
// without a certificate gets one issued to the Service's names
// (<name>.<ns>.svc[.cluster.local]) by a CA of its own that nobody trusts,
// as httptest's is: nsman refuses it for want of a trusted issuer, not for
// a name that does not match. It returns the URL a manager of ns names it
// by: http(s)://<name>.<ns>.svc.cluster.local:<port>.
func StartAsService(t testing.TB, admin kubernetes.Interface, ns, name string, srv *http.Server) string {
	t.Helper()
	l := listenAsPod(t)
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
	url := podService(t, admin, ns, name, l.Addr().(*net.TCPAddr))
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

// listenAsPod listens on a new port of receiverIP.
func listenAsPod(t testing.TB) net.Listener {
	t.Helper()
	ip := ReceiverIP(t)
	l, err := net.Listen("tcp", netip.AddrPortFrom(ip, 0).String())
	if err != nil {
		t.Fatalf("listen on %s: %v", ip, err)
	}
	return l
}

// podService creates Service name of namespace ns on addr's port, with
// a selector that picks one Pod at addr's IP, whose ready endpoint an
// EndpointSlice gives on that port, and returns the Service's URL.
func podService(t testing.TB, admin kubernetes.Interface, ns, name string, addr *net.TCPAddr) string {
	t.Helper()
	ctx := t.Context()
	ip, ok := netip.AddrFromSlice(addr.IP)
	if !ok {
		t.Fatalf("listener address %s", addr)
	}
	ip = ip.Unmap()
	// A manifest played out may name its namespace before it is applied.
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
	selector := map[string]string{"app.kubernetes.io/name": name}
	port := int32(addr.Port)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			Ports:    []corev1.ServicePort{{Name: "http", Port: port, TargetPort: intstr.FromInt32(port), Protocol: corev1.ProtocolTCP}},
			Selector: selector,
		},
	}
	if _, err := admin.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Service %s/%s: %v", ns, name, err)
	}
	pod := ReadyPod(t, admin, ns, name+"-"+strconv.Itoa(addr.Port), selector, ip)
	ServiceEndpoint(t, admin, ns, name, pod, port)
	return "http://" + name + "." + ns + ".svc.cluster.local:" + strconv.Itoa(addr.Port)
}

// ReadyPod creates, as admin, Pod name of namespace ns with labels on a
// node no kubelet runs, and writes its status as a kubelet would: Running,
// Ready, at ip. Each of muts may change the Pod, its status included,
// before it is created.
func ReadyPod(t testing.TB, admin kubernetes.Interface, ns, name string, labels map[string]string, ip netip.Addr, muts ...func(*corev1.Pod)) *corev1.Pod {
	t.Helper()
	ctx := t.Context()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: staticNode}}
	if _, err := admin.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	now := metav1.Now()
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			NodeName: staticNode, RestartPolicy: corev1.RestartPolicyNever,
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers:  []corev1.Container{{Name: "receiver", Image: "registry.invalid/receiver:1"}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: ip.String(), PodIPs: []corev1.PodIP{{IP: ip.String()}}, StartTime: &now,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}},
		},
	}
	for _, mut := range muts {
		mut(want)
	}
	pod, err := admin.CoreV1().Pods(ns).Create(ctx, want, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Pod %s/%s: %v", ns, name, err)
	}
	pod.Status = want.Status
	pod, err = admin.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("write the status of Pod %s/%s: %v", ns, name, err)
	}
	return pod
}

// ServiceEndpoint writes, as admin, an EndpointSlice of Service name of
// namespace ns that gives pod's IP as a ready endpoint of its port "http"
// at port, as the EndpointSlice controller would (it leaves a slice
// managed by another alone).
func ServiceEndpoint(t testing.TB, admin kubernetes.Interface, ns, name string, pod *corev1.Pod, port int32) {
	t.Helper()
	ref := &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
	EndpointSlice(t, admin, ns, name, pod.Name, netip.AddrPortFrom(netip.MustParseAddr(pod.Status.PodIP), uint16(port)), ref)
}

// EndpointSlice writes, as admin, EndpointSlice sliceName of Service name
// of namespace ns that gives at as a ready endpoint of its port "http",
// with ref as the endpoint's target (none when nil): as the controller
// would for a Pod, or by hand.
func EndpointSlice(t testing.TB, admin kubernetes.Interface, ns, name, sliceName string, at netip.AddrPort, ref *corev1.ObjectReference) {
	t.Helper()
	addressType := discoveryv1.AddressTypeIPv4
	if at.Addr().Is6() {
		addressType = discoveryv1.AddressTypeIPv6
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name:   sliceName,
			Labels: map[string]string{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "nsman-test"},
		},
		AddressType: addressType,
		Ports:       []discoveryv1.EndpointPort{{Name: new("http"), Port: new(int32(at.Port())), Protocol: new(corev1.ProtocolTCP)}},
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{at.Addr().String()},
			Conditions: discoveryv1.EndpointConditions{Ready: new(true)},
			TargetRef:  ref,
		}},
	}
	if _, err := admin.DiscoveryV1().EndpointSlices(ns).Create(t.Context(), slice, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create EndpointSlice %s/%s: %v", ns, slice.Name, err)
	}
}

// ReceiverIP is the address of this host that a test's receivers listen
// on, as Pods' endpoints.
func ReceiverIP(t testing.TB) netip.Addr {
	t.Helper()
	ip, err := receiverIP()
	if err != nil {
		t.Fatal(err)
	}
	return ip
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
