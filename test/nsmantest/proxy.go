package nsmantest

import (
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nsman/nsman/test/cluster"
)

// KubeconfigThrough starts a TLS server whose handler wrap builds around a
// reverse proxy to the API server, and returns a kubeconfig that reaches
// the API server through it as nsman's ServiceAccount: a test sees, delays,
// fails or acts between nsman's requests. (TLS because client-go sends
// credentials to TLS servers only.)
func (e *Env) KubeconfigThrough(t testing.TB, wrap func(*httputil.ReverseProxy) http.Handler) string {
	t.Helper()
	sa, err := clientcmd.BuildConfigFromFlags("", e.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	apiserver, err := url.Parse(sa.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(&rest.Config{Host: sa.Host, TLSClientConfig: sa.TLSClientConfig})
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(apiserver)
	proxy.Transport = transport
	proxy.ErrorLog = log.New(io.Discard, "", 0)
	srv := httptest.NewTLSServer(wrap(proxy))
	t.Cleanup(srv.Close)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := cluster.WriteKubeconfig(kubeconfig, &rest.Config{Host: srv.URL, BearerToken: sa.BearerToken, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}
