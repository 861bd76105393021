package execute

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/cluster/clustertest"
	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/listpage"
	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// decodeWorkloads decodes list data as selectIn does.
func decodeWorkloads(t *testing.T, data string) []*Workload {
	t.Helper()
	var got []*Workload
	if _, err := listpage.DecodeStreamed(strings.NewReader(data), func(f *WorkloadFields) error {
		w, err := f.Workload(deploymentKind)
		got = append(got, w)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// A workload as SCALE_DOWN lists it keeps what a change reads (name,
// version, replicas, their record, what a pod of its template requests)
// and nothing of the rest, however large.
func TestWorkloadFieldsKeepWhatIsRead(t *testing.T) {
	big := strings.Repeat("x", 300<<10)
	data := `{"kind":"DeploymentList","metadata":{},"items":[{"metadata":{"name":"web","namespace":"team","resourceVersion":"7",` +
		`"annotations":{"` + status.ReplicasAnnotation + `":"3","other":"` + big[:200<<10] + `"}},"spec":{"replicas":2,"template":{"spec":{` +
		`"initContainers":[{"name":"proxy","restartPolicy":"Always","resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}],` +
		`"containers":[{"name":"web","args":["` + big[:100<<10] + `"],"resources":{"requests":{"cpu":"400m","memory":"256Mi"}}}]}}}}]}`
	got := decodeWorkloads(t, data)
	if len(got) != 1 {
		t.Fatalf("%d workloads, want 1", len(got))
	}
	w := got[0].Object
	if w.GetName() != "web" || w.GetNamespace() != "team" || w.GetResourceVersion() != "7" || w.GetKind() != "Deployment" || w.GetAPIVersion() != "apps/v1" {
		t.Errorf("metadata %v", w.Object["metadata"])
	}
	if a := w.GetAnnotations(); len(a) != 1 || a[status.ReplicasAnnotation] != "3" {
		t.Errorf("annotations %v, want the record alone", a)
	}
	if SpecReplicas(w) != 2 {
		t.Errorf("replicas %d, want 2", SpecReplicas(w))
	}
	freed, counted := got[0].Frees(policy.SleepTo{})
	if !counted || freed.CPU.String() != "1" || freed.Memory.String() != "640Mi" || !freed.Storage.IsZero() || freed.LoadBalancers != 0 {
		t.Errorf("frees %s CPU, %s memory, %s storage, %d LoadBalancers (counted %t); want 1, 640Mi, 0, 0, counted",
			freed.CPU.String(), freed.Memory.String(), freed.Storage.String(), freed.LoadBalancers, counted)
	}
	if size := len(write.MustJSON(w.Object)); size > 1<<10 {
		t.Errorf("%d bytes kept of a workload of 300 KiB", size)
	}
}

// fatDeployment is a Deployment of n containers requesting 1m CPU and 1Mi
// each, as a list item: about 210 bytes a container.
func fatDeployment(name string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"metadata":{"name":%q,"namespace":"team-a","resourceVersion":"1"},"spec":{"replicas":2,"template":{"spec":{"containers":[`, name)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"name":"c%05d","image":"registry.invalid/tenant/worker:1.0.0","env":[{"name":"ROLE","value":"worker-%05d"}],`+
			`"resources":{"requests":{"cpu":"1m","memory":"1Mi"},"limits":{"cpu":"2m","memory":"2Mi"}}}`, i, i)
	}
	b.WriteString(`]}}}}`)
	return b.String()
}

// A Deployment of many small containers, the shape that costs most decoded
// (issue 44): its pod template is summed as it is decoded, not kept, when
// it is within MaxRequestsBytes, and not decoded at all past it, where it
// is said not counted; either way what is kept is a few hundred bytes, and
// decoding one within the cap allocates a bounded amount.
func TestWorkloadFieldsBoundAWorkloadOfManyContainers(t *testing.T) {
	within, past := fatDeployment("within", 2000), fatDeployment("past", 7000)
	if len(within) > MaxRequestsBytes || len(past) < 1_400_000 {
		t.Fatalf("fixtures of %d and %d bytes: want one within %d, one of about 1.5 MB", len(within), len(past), MaxRequestsBytes)
	}
	got := decodeWorkloads(t, `{"metadata":{},"items":[`+within+","+past+`]}`)
	if len(got) != 2 {
		t.Fatalf("%d workloads, want 2", len(got))
	}
	for _, w := range got {
		if size := len(write.MustJSON(w.Object.Object)); size > 300 {
			t.Errorf("%s: %d bytes kept: %s", w.Object.GetName(), size, write.MustJSON(w.Object.Object))
		}
	}
	freed, counted := got[0].Frees(policy.SleepTo{})
	if !counted || freed.CPU.String() != "4" || freed.Memory.String() != "4000Mi" {
		t.Errorf("within the cap: frees %s CPU, %s memory, counted %t; want 2 replicas × 2000 × (1m, 1Mi), counted", freed.CPU.String(), freed.Memory.String(), counted)
	}
	if freed, counted := got[1].Frees(policy.SleepTo{}); counted || got[1].Requests.Uncounted != len(past) || !freed.CPU.IsZero() || !freed.Memory.IsZero() {
		t.Errorf("past the cap: frees %s CPU, %s memory, counted %t, %d bytes uncounted; want nothing counted, %d bytes said",
			freed.CPU.String(), freed.Memory.String(), counted, got[1].Requests.Uncounted, len(past))
	}

	// What one decode allocates, whatever it keeps: the template within the
	// cap is decoded and summed; past it, only the small fields are.
	allocated := func(item string) uint64 {
		data := []byte(item)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		var f WorkloadFields
		if err := f.UnmarshalJSON(data); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	atCap := fatDeployment("at-cap", MaxRequestsBytes/215)
	if a := allocated(atCap); a > 8<<20 {
		t.Errorf("decoding a workload of %d bytes allocated %d bytes, want at most 8 MiB", len(atCap), a)
	}
	t.Logf("decoding a workload of %d bytes, within the cap, allocated %d bytes; one of %d bytes, past it, %d", len(atCap), allocated(atCap), len(past), allocated(past))
	if a := allocated(past); a > 1<<20 {
		t.Errorf("decoding a workload of %d bytes, past the cap, allocated %d bytes, want at most 1 MiB", len(past), a)
	}
}

// A record's value longer than nsman reads is said, not kept: the
// workload is left as it is.
func TestWorkloadFieldsRefuseALongRecord(t *testing.T) {
	data := `{"metadata":{},"items":[{"metadata":{"name":"web","namespace":"team","annotations":{"` + status.ReplicasAnnotation + `":"` +
		strings.Repeat("9", maxKeptValue+1) + `"}},"spec":{"replicas":0}}]}`
	if _, err := listpage.DecodeStreamed(strings.NewReader(data), func(f *WorkloadFields) error {
		_, err := f.Workload(deploymentKind)
		return err
	}); err == nil || !strings.Contains(err.Error(), "more than the 256 nsman reads") {
		t.Errorf("error %v, want the record's length said", err)
	}
}

// EachKind changes a page's workloads before it reads the next page: the
// server holds the second page until the first page's workload was
// changed. Listing every page before changing any would wait here forever
// (the test's deadline).
func TestEachKindChangesAPageBeforeTheNext(t *testing.T) {
	changedFirst := make(chan struct{})
	bodies := clustertest.DiscoveryBodies()
	item := func(name string) string {
		return `{"metadata":{"name":"` + name + `","namespace":"team-a","resourceVersion":"1"},"spec":{"replicas":1}}`
	}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/apis/apps/v1/namespaces/team-a/deployments" {
			body, ok := bodies[r.URL.Path]
			if !ok {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(body))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("continue") == "" {
			_, _ = w.Write([]byte(`{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{"continue":"next"},"items":[` + item("first") + `]}`))
			return
		}
		select {
		case <-changedFirst:
		case <-time.After(5 * time.Second):
			http.Error(w, "the first page's workload was not changed before the second page was asked for", http.StatusGatewayTimeout)
			return
		}
		_, _ = w.Write([]byte(`{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{},"items":[` + item("second") + `]}`))
	}))
	t.Cleanup(server.Close)
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: server.URL})
	if err != nil {
		t.Fatal(err)
	}
	deployment, _ := probe.KnownKind("Deployment")
	var changed []string
	_, _, err = EachKind(t.Context(), cluster.Clients{Kube: kube}, "team-a", []probe.Selection{{Kind: deployment}}, false,
		func(kind probe.Kind, w *Workload) (string, error) {
			if changed = append(changed, w.Object.GetName()); len(changed) == 1 {
				close(changedFirst)
			}
			return "", nil
		})
	if err != nil || strings.Join(changed, ",") != "first,second" {
		t.Errorf("changed %q, error %v; want first, then second", changed, err)
	}
}

// A SCALE_DOWN or SLEEP that scales a workload too large to read its
// template says so in its effect, and counts what the others free.
func TestSleepSaysRequestsNotCounted(t *testing.T) {
	small := `{"metadata":{"name":"small","namespace":"team-a","resourceVersion":"1"},"spec":{"replicas":1,"template":{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}]}}}}`
	past := fatDeployment("fat", 7000)
	bodies := clustertest.DiscoveryBodies()
	bodies["/apis/apps/v1/namespaces/team-a/deployments"] = `{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{},"items":[` + small + "," + past + `]}`
	w := newFakeWriter()
	w.done = report.StateFired
	reads := emptyReader(t)
	reads.Clients.Kube = clustertest.APIServer(t, bodies)
	x := newExecutor(t, w, reads)
	x.SkipReclaim = false
	e := x.CarryOut(t.Context(), &fakeRecord{}, decision(sleeping(false), func(*decide.Decision) {}))
	want := []string{"scale Deployment/small from 1 to 0",
		fmt.Sprintf("scale Deployment/fat from 2 to 0; its requests not counted: %d bytes as listed, more than the %d read for them", len(past), MaxRequestsBytes)}
	if e.State != report.StateFired || strings.Join(e.Effects, "\n") != strings.Join(want, "\n") {
		t.Errorf("entry %s %q, effects %q; want fired, %q", e.State, e.Message, e.Effects, want)
	}
	if e.Reclaimed == nil || e.Reclaimed.CPU.String() != "100m" || e.Reclaimed.Memory.String() != "64Mi" {
		t.Errorf("reclaimed %v, want the small workload's 100m and 64Mi alone", e.Reclaimed)
	}
}

// Scaling a workload to zero frees its replicas (1 when unset) times what
// one pod of its template requests, sidecars counted.
func TestWorkloadFrees(t *testing.T) {
	template := `"template":{"spec":{"initContainers":[{"name":"proxy","restartPolicy":"Always","resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}],` +
		`"containers":[{"name":"web","resources":{"requests":{"cpu":"400m","memory":"256Mi"}}}]}}`
	for _, tt := range []struct {
		name, spec  string
		cpu, memory string
	}{
		{name: "3 replicas", spec: `{"replicas":3,` + template + `}`, cpu: "1500m", memory: "960Mi"},
		{name: "replicas unset", spec: `{` + template + `}`, cpu: "500m", memory: "320Mi"},
		{name: "0 replicas", spec: `{"replicas":0,` + template + `}`, cpu: "0", memory: "0"},
		{name: "a template that is not a pod's", spec: `{"replicas":2,"template":{"spec":{"containers":"web"}}}`, cpu: "0", memory: "0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := decodeWorkloads(t, `{"metadata":{},"items":[{"metadata":{"name":"web","namespace":"team"},"spec":`+tt.spec+`}]}`)
			freed, counted := got[0].Frees(policy.SleepTo{})
			if !counted || freed.CPU.String() != tt.cpu || freed.Memory.String() != tt.memory || !freed.Storage.IsZero() {
				t.Errorf("frees %s CPU, %s memory, %s storage, counted %t; want %s, %s, 0, counted", freed.CPU.String(), freed.Memory.String(), freed.Storage.String(), counted, tt.cpu, tt.memory)
			}
		})
	}
}

// A conflict's re-read is decoded as a list is: the workload read again,
// of about 1.5 MB, is held as its few fields, its requests said not
// counted, not as a second copy whole.
func TestConflictRereadsAsListed(t *testing.T) {
	fat := strings.Replace(fatDeployment("web", 7000), `"namespace":"team-a","resourceVersion":"1"`, `"namespace":"ns","resourceVersion":"2"`, 1)
	bodies := clustertest.DiscoveryBodies()
	bodies["/apis/apps/v1/namespaces/ns/deployments"] = `{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{},"items":[` + fat + `]}`
	w := &conflictOnce{Writer: dryRun}
	effect, from, err := Sleep(t.Context(), cluster.Clients{Kube: clustertest.APIServer(t, bodies)}, w, deploymentKind, listed(deployment(3, "1")), policy.SleepTo{})
	if err != nil || effect != "scale Deployment/web from 2 to 0" {
		t.Fatalf("effect %q, error %v; want the workload read again scaled from its 2 replicas", effect, err)
	}
	if size := len(write.MustJSON(from.Object.Object)); size > 300 || from.Requests.Uncounted != len(fat) {
		t.Errorf("read again: %d bytes kept, %d said uncounted; want a few hundred, and the %d bytes listed said", size, from.Requests.Uncounted, len(fat))
	}
}
