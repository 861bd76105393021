package bench

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

// The process floor (testdata/trafficfloor) builds, makes the read floor's
// lists, each paged, and the query, in that order, against a fake API
// server and Prometheus, prints what it read, and fails when the query
// answers requests for fewer namespaces than it is told.
func TestTrafficFloorProgram(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "trafficfloor")
	if err := buildTrafficFloor(nsmantest.RepoRoot(), bin); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		asked []string
	)
	items := func(kind, apiVersion string, names ...string) string {
		var objs []string
		for _, n := range names {
			objs = append(objs, fmt.Sprintf(`{"kind":%q,"apiVersion":%q,"metadata":{"name":%q}}`, kind, apiVersion, n))
		}
		return strings.Join(objs, ",")
	}
	metaList := func(cont, objs string) string {
		return fmt.Sprintf(`{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"continue":%q},"items":[%s]}`, cont, objs)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path+" "+r.URL.Query().Get("continue")+" "+r.URL.Query().Get("limit"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		gv := cluster.ManagerResource.GroupVersion().String()
		switch r.URL.Path {
		case "/apis/" + gv + "/" + cluster.ManagerResource.Resource:
			fmt.Fprintf(w, `{"kind":"NamespaceManagerList","apiVersion":%q,"metadata":{},"items":[%s]}`, gv, items("NamespaceManager", gv, "idle"))
		case "/api/v1/namespaces":
			if r.URL.Query().Get("continue") == "" {
				fmt.Fprint(w, metaList("next", items("PartialObjectMetadata", "meta.k8s.io/v1", "tr-00000")))
			} else {
				fmt.Fprint(w, metaList("", items("PartialObjectMetadata", "meta.k8s.io/v1", "tr-00001", "other")))
			}
		case "/apis/apps/v1/replicasets", "/apis/apps/v1/controllerrevisions", "/apis/batch/v1/jobs", "/api/v1/pods":
			fmt.Fprint(w, metaList("", ""))
		case "/api/v1/query":
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[`+
				`{"metric":{"namespace":"tr-00000"},"value":[1,"3"]},{"metric":{"namespace":"tr-00001"},"value":[1,"1"]},`+
				`{"metric":{"namespace":"other"},"value":[1,"9"]},{"metric":{"namespace":"tr-00002"},"value":[1,"0"]}]}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, fmt.Appendf(nil, "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: %q}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n", srv.URL), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(want string) (string, string, error) {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, "--kubeconfig", kubeconfig, "--prometheus-url", srv.URL, "--query", "sum(x)", "--prefix", "tr", "--want", want, "--page-size", "2")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	out, errOut, err := run("2")
	if err != nil {
		t.Fatalf("want 2: %v; stderr: %s", err, errOut)
	}
	if want := `{"managers":1,"listed":{"controllerrevisions":0,"jobs":0,"namespaces":3,"pods":0,"replicasets":0},"series":4,"used":2}`; strings.TrimSpace(out) != want {
		t.Errorf("printed %s, want %s", out, want)
	}
	wantAsked := []string{
		"/apis/k8s.consol.de/v1beta1/namespacemanagers  2", "/api/v1/namespaces  2", "/api/v1/namespaces next 2",
		"/apis/apps/v1/replicasets  2", "/apis/apps/v1/controllerrevisions  2", "/apis/batch/v1/jobs  2", "/api/v1/pods  2", "/api/v1/query  ",
	}
	// Read under the lock: the handlers ran on the server's goroutines, and
	// only the lock orders their appends before this read (the race detector
	// cannot see that the floor's process received each answer).
	mu.Lock()
	gotAsked := strings.Join(asked, "\n")
	mu.Unlock()
	if gotAsked != strings.Join(wantAsked, "\n") {
		t.Errorf("asked, in order:\n%s\nwant:\n%s", gotAsked, strings.Join(wantAsked, "\n"))
	}
	if _, errOut, err := run("3"); err == nil || !strings.Contains(errOut, "answered requests for 2 namespaces tr-…, want 3") {
		t.Errorf("want 3: %v, stderr %q; want it to fail, saying why", err, errOut)
	}
}
