package probe

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/rest"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/listpage"
	"github.com/nsman/nsman/policy"
)

// jobsServer serves lists of jobs, by namespace and cluster-wide, in pages
// of the limit asked (the continue token is the index of the next Job), as
// the API server does; requests counts the pages served.
type jobsServer struct {
	jobs []*batchv1.Job
	// pods are served, cluster-wide and as metadata, as the sweep's index
	// lists them.
	pods     []metav1.PartialObjectMetadata
	requests atomic.Int64
	// limits are the limits asked, in order.
	limits chan int
}

func newJobsServer(t *testing.T, jobs ...*batchv1.Job) (*jobsServer, kubernetes.Interface) {
	t.Helper()
	js := &jobsServer{jobs: jobs, limits: make(chan int, 1000)}
	srv := httptest.NewServer(js)
	t.Cleanup(srv.Close)
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return js, client
}

func (js *jobsServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	js.requests.Add(1)
	if r.URL.Path == "/api/v1/pods" {
		selector, err := labels.Parse(r.URL.Query().Get("labelSelector"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		list := metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"}}
		for _, p := range js.pods {
			if selector.Matches(labels.Set(p.Labels)) {
				list.Items = append(list.Items, p)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(list)
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/apis/batch/v1/")
	namespace := ""
	if rest, ok := strings.CutPrefix(path, "namespaces/"); ok {
		namespace, path, _ = strings.Cut(rest, "/")
	}
	if path != "jobs" || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	js.limits <- limit
	from, _ := strconv.Atoi(r.URL.Query().Get("continue"))
	list := batchv1.JobList{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "JobList"}}
	i := from
	for ; i < len(js.jobs) && (limit == 0 || len(list.Items) < limit); i++ {
		if namespace == "" || js.jobs[i].Namespace == namespace {
			list.Items = append(list.Items, *js.jobs[i])
		}
	}
	if i < len(js.jobs) {
		list.Continue = strconv.Itoa(i)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(list)
}

func testJob(namespace, name string, template map[string]string, ended ...batchv1.JobConditionType) *batchv1.Job {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	job.Spec.Template.Labels = template
	for _, c := range ended {
		job.Status.Conditions = append(job.Status.Conditions, batchv1.JobCondition{Type: c, Status: corev1.ConditionTrue})
	}
	return job
}

func podsOf(t *testing.T, kube kubernetes.Interface, pods ...runtime.Object) *Pods {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	reads := testReads(cluster.Clients{Metadata: metadatafake.NewSimpleMetadataClient(scheme, pods...), Kube: kube}, defaultClaimTTL, nil)
	reads.PageSize = 2
	return NewPods(reads)
}

// The Jobs of a namespace are read once a sweep, in pages, however many
// checks ask; each check finds what its query looks for.
func TestNamespaceJobsReadOnce(t *testing.T) {
	big := strings.Repeat("x", 200<<10)
	var jobs []*batchv1.Job
	for i := range 5 {
		job := testJob("team", fmt.Sprintf("done-%d", i), map[string]string{"suite": "a"}, batchv1.JobComplete)
		job.Annotations = map[string]string{"big": big}
		jobs = append(jobs, job)
	}
	jobs = append(jobs,
		testJob("team", "running", map[string]string{"suite": "b"}),
		testJob("team", "broken", map[string]string{"suite": "c"}, batchv1.JobFailed),
		testJob("other", "running", map[string]string{"suite": "a"}))
	js, kube := newJobsServer(t, jobs...)
	p := podsOf(t, kube)
	check := p.Checks(false)
	for _, c := range []struct {
		cond                 string
		suite                string
		notSucceeded, failed int
	}{
		{policy.ConditionPodsSucceed, "a", 0, 0},
		{policy.ConditionPodsSucceed, "b", 1, 0},
		{policy.ConditionPodsSucceed, "c", 0, 0},
		{policy.ConditionPodsFailed, "c", 0, 1},
		{policy.ConditionPodsFailed, "a", 0, 0},
	} {
		got, err := check(t.Context(), "team", policy.Condition{Type: c.cond, PodLabels: map[string]string{"suite": c.suite}})
		if err != nil {
			t.Fatal(err)
		}
		if got.NotSucceeded != c.notSucceeded || got.Failed != c.failed {
			t.Errorf("%s suite=%s: %+v, want %d not succeeded, %d failed", c.cond, c.suite, got, c.notSucceeded, c.failed)
		}
	}
	// 7 Jobs in team, 2 a page: 4 pages (the server pages over all 8).
	if got := js.requests.Load(); got != 4 {
		t.Errorf("%d list requests for 5 checks of one namespace, want 4 (its pages, once)", got)
	}
	close(js.limits)
	for limit := range js.limits {
		if limit != 2 {
			t.Errorf("a page of %d Jobs asked, want the page size, 2", limit)
		}
	}
	if x := p.jobs.byNamespace["team"]; x.notSucceeded.size+x.failed.size > 1<<10 {
		t.Errorf("%d bytes kept of team's Jobs, want the labels and words only", x.notSucceeded.size+x.failed.size)
	}
}

// A namespace of more Jobs than MaxJobsRead fails its checks, saying so.
func TestNamespaceJobsAreCapped(t *testing.T) {
	jobs := make([]*batchv1.Job, MaxJobsRead+1)
	for i := range jobs {
		jobs[i] = testJob("team", fmt.Sprintf("j-%d", i), nil, batchv1.JobComplete)
	}
	_, kube := newJobsServer(t, jobs...)
	p := podsOf(t, kube)
	p.reads.PageSize = defaultPageSize
	_, err := p.Checks(false)(t.Context(), "team", policy.Condition{Type: policy.ConditionPodsSucceed})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d Jobs", MaxJobsRead)) {
		t.Errorf("%d Jobs: %v, want an error that says more than %d", len(jobs), err, MaxJobsRead)
	}
}

// decodeStreamed keeps of each item only what its type names, and reads
// the continue token wherever the list's metadata comes.
func TestDecodeStreamed(t *testing.T) {
	data := `{"kind":"JobList","items":[{"metadata":{"name":"a","annotations":{"x":"y"}},"spec":{"template":{"metadata":{"labels":{"k":"v"}}}}},` +
		`{"metadata":{"name":"b"},"status":{"succeeded":2,"conditions":[{"type":"Complete","status":"True"}]}}],"metadata":{"continue":"next"}}`
	var got []*jobFields
	meta, err := listpage.DecodeStreamed(strings.NewReader(data), func(f *jobFields) error { got = append(got, f); return nil })
	if err != nil || meta.Continue != "next" {
		t.Fatalf("continue %q, %v; want next", meta.Continue, err)
	}
	if len(got) != 2 || got[0].Metadata.Name != "a" || !labels.SelectorFromSet(map[string]string{"k": "v"}).Matches(labels.Set(got[0].Spec.Template.Metadata.Labels)) ||
		got[1].Status.Succeeded != 2 || !jobEnded(got[1].job(), batchv1.JobComplete) {
		t.Errorf("decoded %+v", got)
	}
	if _, err := listpage.DecodeStreamed(strings.NewReader(`{"items":null}`), func(*jobFields) error { return nil }); err != nil {
		t.Errorf("items null: %v", err)
	}
	if _, err := listpage.DecodeStreamed(strings.NewReader(`{"items":[{"metadata":`), func(*jobFields) error { return nil }); err == nil {
		t.Error("a list cut short decoded without an error")
	}
}

// TestConfirmerAnswersForTheWholeChunk: a list made to check again the
// namespaces the index let pass answers for every namespace of the chunk
// (a namespace due by another policy, with a pod running, is not let
// pass), and a namespace outside the chunk is asked by itself.
func TestConfirmerAnswersForTheWholeChunk(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	running := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "busy", Name: "run", Labels: map[string]string{"app": "e2e"}}}
	elsewhere := running.DeepCopy()
	elsewhere.Namespace = "elsewhere"
	js, kube := newJobsServer(t)
	js.pods = []metav1.PartialObjectMetadata{*running, *elsewhere}
	p := NewPods(testReads(cluster.Clients{Metadata: metadatafake.NewSimpleMetadataClient(scheme, running, elsewhere), Kube: kube}, defaultClaimTTL, nil))
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.consol.de/v1beta1", "kind": "NamespaceManager",
		"metadata": map[string]any{"name": "leftovers", "namespace": "platform", "uid": "u", "generation": int64(1)},
		"spec": map[string]any{"namePatterns": []any{"*"}, "policies": []any{
			map[string]any{"name": "done", "condition": map[string]any{"type": "PODS_SUCCEED", "params": map[string]any{"podLabels": map[string]any{"app": "e2e"}}}, "action": map[string]any{"type": "DELETE"}},
		}},
	}}
	m, problems := policy.Parse(obj)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	index := NewIndex()
	check := p.Confirmer(m, index, p.Checks(false)).Checks(t.Context(), []string{"a", "b", "c", "busy"}, 3)
	cond := m.Policies[0].Condition
	for ns, want := range map[string]int{"a": 0, "busy": 1, "elsewhere": 1} {
		got, err := check(t.Context(), ns, cond)
		if err != nil {
			t.Fatal(err)
		}
		if got.NotSucceeded != want {
			t.Errorf("%s: %+v, want %d not succeeded", ns, got, want)
		}
	}
}
