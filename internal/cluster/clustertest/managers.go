// Package clustertest holds fixtures for the tests of the packages that
// read the cluster: a client of a test server that serves
// NamespaceManagers, and a fake API server's discovery.
package clustertest

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/nsman/nsman/internal/cluster"
)

// ManagersClient is a cluster.Clients.Managers that talks to server.
func ManagersClient(t testing.TB, server http.Handler) rest.Interface {
	t.Helper()
	ts := httptest.NewServer(server)
	t.Cleanup(ts.Close)
	restCfg := dynamic.ConfigFor(&rest.Config{Host: ts.URL})
	gv := cluster.ManagerResource.GroupVersion()
	restCfg.GroupVersion, restCfg.APIPath = &gv, "/apis"
	client, err := rest.RESTClientFor(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}
