package integration

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

// Past probe.PodIndexAfter pods checks, a sweep answers them from one
// cluster-wide list of pods that have not succeeded; its decisions must be
// those that checks namespace by namespace make. 120 PODS_SUCCEED managers,
// 30 in each of 4 namespaces, each watch their own suite of pods: a suite
// whose pods all succeeded fires its webhook, any other waits.
func TestPodsChecksAtScale(t *testing.T) {
	e := setup(t)
	recv := nsmantest.NewReceiver(t)
	const namespaces, suites = 4, 30
	caseID := ""
	want := map[string]bool{} // manager -> fires
	for n := range namespaces {
		ns := shared.Namespace(t)
		if caseID == "" {
			caseID = ns
		}
		for k := range suites {
			suite := fmt.Sprintf("s%02d", k)
			// Phases by suite: all succeeded, one still running beside a
			// succeeded one, pending (no phase yet), failed.
			var phases []corev1.PodPhase
			switch (k + n) % 4 {
			case 0:
				phases = []corev1.PodPhase{corev1.PodSucceeded, corev1.PodSucceeded}
			case 1:
				phases = []corev1.PodPhase{corev1.PodSucceeded, corev1.PodRunning}
			case 2:
				phases = []corev1.PodPhase{corev1.PodPending}
			case 3:
				phases = []corev1.PodPhase{corev1.PodFailed}
			}
			for i, phase := range phases {
				podWithPhase(t, ns, fmt.Sprintf("%s-%d", suite, i), map[string]string{"suite": suite}, phase)
			}
			name := "suite-" + suite
			want[ns+"/"+name] = (k+n)%4 == 0
			createManager(t, managerObj(ns, name, caseID, []any{
				podsPolicy("notify when "+suite+" passed", map[string]any{"suite": suite}, webhookAction(recv.ServiceURL(t, shared.Admin, ns, "sink")+"/"+ns+"/"+name)),
			}, targeting(ns)))
		}
	}
	before, err := shared.AuditedRequests(t.Context(), e.User)
	if err != nil {
		t.Fatal(err)
	}

	res := e.Sweep(t, "-l", caseLabel+"="+caseID)
	wantCode(t, res, 0)
	waitingOnPod := regexp.MustCompile(`^not every pod matching suite=s\d\d Succeeded: pod s\d\d-\d has not succeeded$`)
	fires := 0
	for id, fire := range want {
		ns, name, _ := strings.Cut(id, "/")
		got := res.Entry(t, ns, name)
		switch {
		case fire && got.State != report.StateFired:
			t.Errorf("%s: %s (%s), want fired: every pod of its suite succeeded", id, got.State, got.Message)
		case !fire && (got.State != report.StateWaiting || !waitingOnPod.MatchString(got.Message)):
			// The same words whether the check used the index or not: the
			// status must not change with the way a manager was checked.
			t.Errorf("%s: %s (%q), want waiting with a message matching %s", id, got.State, got.Message, waitingOnPod)
		}
		if fire {
			fires++
		}
	}
	if got := len(recv.Deliveries()); got != fires {
		t.Errorf("%d webhooks delivered, want %d", got, fires)
	}

	after, err := shared.AuditedRequests(t.Context(), e.User)
	if err != nil {
		t.Fatal(err)
	}
	clusterWide, perNamespace := 0, 0
	for _, r := range after[len(before):] {
		if r.Verb != "list" || r.Resource != "pods" {
			continue
		}
		if r.Namespace == "" {
			clusterWide++
		} else {
			perNamespace++
		}
	}
	// Every check up to PodIndexAfter asks its namespace; after that only a
	// check the index lets pass does, to confirm it. Each webhook to the
	// namespace's Service reads the Pod it dials too (internal/execute/egress.go).
	checks := namespaces * suites
	if clusterWide < 1 {
		t.Errorf("no cluster-wide pods list after %d checks", checks)
	}
	if limit := probe.PodIndexAfter + fires + len(recv.Deliveries()); perNamespace > limit || perNamespace < fires {
		t.Errorf("%d pods lists by namespace for %d checks, want between %d and %d", perNamespace, checks, fires, limit)
	}
	t.Logf("%d checks: %d pods lists by namespace, %d cluster-wide; %d fired", checks, perNamespace, clusterWide, fires)
}

// confirmPassing is how many of a confirmCase's namespaces have pods that
// all succeeded; the PodIndexAfter others have a Running one.
const confirmPassing = 20

// confirmCase is a rule, "passed" (PODS_SUCCEED on app=e2e pods, then a
// WEBHOOK), over PodIndexAfter+confirmPassing namespaces: the first
// confirmPassing with a Succeeded pod, the second of them also with a
// suspended Job, the others with a Running pod.
type confirmCase struct {
	home    string
	targets []string
	recv    *nsmantest.Receiver
	e2e     map[string]string
	job     *batchv1.Job
}

func newConfirmCase(t *testing.T) confirmCase {
	t.Helper()
	c := confirmCase{home: shared.Namespace(t), e2e: map[string]string{"app": "e2e"}}
	c.targets = labelled(t, c.home, probe.PodIndexAfter+confirmPassing)
	for i, ns := range c.targets {
		phase := corev1.PodSucceeded
		if i >= confirmPassing {
			phase = corev1.PodRunning
		}
		podWithPhase(t, ns, "test", c.e2e, phase)
	}
	c.job = &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "next-suite"},
		Spec: batchv1.JobSpec{Suspend: ptr.To(true), Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: c.e2e},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "main", Image: "registry.invalid/test:1"}}},
		}},
	}
	if _, err := shared.Admin.BatchV1().Jobs(c.targets[1]).Create(t.Context(), c.job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.recv = nsmantest.NewReceiver(t)
	createManager(t, managerObj(c.home, "passed", c.home, []any{
		podsPolicy("suite passed", map[string]any{"app": "e2e"}, webhookAction(c.recv.URL+"/rule")),
	}, selecting(c.home)))
	return c
}

// TestRuleConfirmsChecksInOneList: a rule over more than PodIndexAfter
// namespaces screens them with the sweep's index of pods that have not
// succeeded, and confirms the checks it would let pass with one fresh list
// of such pods and of Jobs, not namespace by namespace. The index cannot
// let a check pass: a pod started after it was listed (created here by the
// proxy as soon as the index's list is answered) holds its namespace back,
// as does a Job that has not finished.
func TestRuleConfirmsChecksInOneList(t *testing.T) {
	e := setup(t)
	c := newConfirmCase(t)
	home, targets, recv := c.home, c.targets, c.recv
	e2e, suspended := c.e2e, c.job
	late, withJob := targets[0], targets[1]

	// The first cluster-wide list of pods is the sweep's index: once the
	// API server has answered it, a pod starts in namespace late.
	var started sync.Once
	var lateErr error
	kubeconfig := e.KubeconfigThrough(t, func(p *httputil.ReverseProxy) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet || r.URL.Path != "/api/v1/pods" {
				p.ServeHTTP(w, r)
				return
			}
			answer := httptest.NewRecorder()
			p.ServeHTTP(answer, r)
			started.Do(func() {
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "rerun", Labels: e2e}, Spec: suspended.Spec.Template.Spec}
				_, lateErr = shared.Admin.CoreV1().Pods(late).Create(context.Background(), pod, metav1.CreateOptions{})
			})
			maps.Copy(w.Header(), answer.Header())
			w.WriteHeader(answer.Code)
			_, _ = w.Write(answer.Body.Bytes())
		})
	})
	before, err := shared.AuditedRequests(t.Context(), e.User)
	if err != nil {
		t.Fatal(err)
	}

	// One page per list, however many pods the other tests made.
	args := []string{"-l", caseLabel + "=" + home, "--trusted-namespaces", home, "--chunk-size", "100000"}
	res := e.Sweep(t, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	wantCode(t, res, 0)
	started.Do(func() {}) // what the proxy wrote is seen from here on
	var order []string
	for _, e := range res.Report.Entries {
		if e.Rule && e.Name == "passed" {
			order = append(order, e.Target)
		}
	}
	if !slices.IsSorted(order) {
		t.Errorf("the rule's entries are not in the order of their namespaces: %v", order)
	}
	if lateErr != nil {
		t.Fatalf("start a pod in %s: %v", late, lateErr)
	}
	if p := res.Pair(t, home, "passed", late); p.State != report.StateWaiting || !strings.Contains(p.Message, "pod rerun has not succeeded") {
		t.Errorf("%s, where a pod started after the index was listed: %s (%s), want waiting on pod rerun", late, p.State, p.Message)
	}
	if p := res.Pair(t, home, "passed", withJob); p.State != report.StateWaiting || !strings.Contains(p.Message, "job next-suite has not finished") {
		t.Errorf("%s, with a Job that has not finished: %s (%s), want waiting on job next-suite", withJob, p.State, p.Message)
	}
	for i, ns := range targets[2:] {
		p := res.Pair(t, home, "passed", ns)
		if want := report.StateFired; i+2 >= confirmPassing {
			want = report.StateWaiting
			if p.State != want || !strings.Contains(p.Message, "pod test has not succeeded") {
				t.Errorf("%s, with a Running pod: %s (%s), want waiting on pod test", ns, p.State, p.Message)
			}
		} else if p.State != want {
			t.Errorf("%s, whose pods all succeeded: %s (%s), want %s", ns, p.State, p.Message, want)
		}
	}
	if got, want := len(recv.Deliveries()), confirmPassing-2; got != want {
		t.Errorf("%d webhooks delivered, want %d", got, want)
	}

	// The index; then the Jobs counted, and one list of each to confirm
	// the checks the index let pass.
	wantLists(t, e, before, map[string]int{"pods cluster-wide": 2, "jobs cluster-wide": 2})

	// The next sweep lists the index beside the namespaces, as the rule's
	// status says it had more than PodIndexAfter namespaces to evaluate:
	// the proxy answers the namespaces only once the pods are asked for
	// (or after 10 s). The pairs that fired are done; of the others, only
	// the namespace with the Job has no pod in the index, and one namespace
	// is cheaper to confirm by itself (its pods, then its Jobs) than with a
	// list of them all.
	podsAsked := make(chan struct{})
	var askOnce sync.Once
	ahead := true
	kubeconfig = e.KubeconfigThrough(t, func(p *httputil.ReverseProxy) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.Method == http.MethodGet && r.URL.Path == "/api/v1/pods":
				askOnce.Do(func() { close(podsAsked) })
			case r.Method == http.MethodGet && r.URL.Path == "/api/v1/namespaces":
				select {
				case <-podsAsked:
				case <-time.After(10 * time.Second):
					askOnce.Do(func() { ahead = false; close(podsAsked) })
				}
			}
			p.ServeHTTP(w, r)
		})
	})
	before, err = shared.AuditedRequests(t.Context(), e.User)
	if err != nil {
		t.Fatal(err)
	}
	res = e.Sweep(t, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	wantCode(t, res, 0)
	askOnce.Do(func() {})
	if !ahead {
		t.Errorf("second sweep: no pods list while the namespaces were being listed")
	}
	if got, want := res.Report.Summary.States[report.StateDone], confirmPassing-2; got != want {
		t.Errorf("second sweep: %d pairs done, want %d (%v)", got, want, res.Report.Summary.States)
	}
	if got := len(recv.Deliveries()); got != confirmPassing-2 {
		t.Errorf("%d webhooks delivered after the second sweep, want still %d", got, confirmPassing-2)
	}
	wantLists(t, e, before, map[string]int{"pods cluster-wide": 1, "pods by namespace": 1, "jobs by namespace": 1})
	if p := res.Pair(t, home, "passed", withJob); p.State != report.StateWaiting || !strings.Contains(p.Message, "job next-suite has not finished") {
		t.Errorf("second sweep, %s: %s (%s), want waiting on job next-suite", withJob, p.State, p.Message)
	}
}

// wantLists compares the lists of pods and Jobs that nsman made since
// before, cluster-wide and by namespace, with want.
func wantLists(t *testing.T, e *nsmantest.Env, before []cluster.Request, want map[string]int) {
	t.Helper()
	after, err := shared.AuditedRequests(t.Context(), e.User)
	if err != nil {
		t.Fatal(err)
	}
	lists := countLists(after[len(before):])
	maps.DeleteFunc(lists, func(k string, _ int) bool { return !strings.HasPrefix(k, "pods ") && !strings.HasPrefix(k, "jobs ") })
	if !maps.Equal(lists, want) {
		t.Errorf("lists of pods and jobs: %v, want %v", lists, want)
	}
}

// countLists counts the lists among reqs by resource and where:
// "pods cluster-wide", "replicasets by namespace".
func countLists(reqs []cluster.Request) map[string]int {
	lists := map[string]int{}
	for _, r := range reqs {
		if r.Verb == "list" {
			where := "by namespace"
			if r.Namespace == "" {
				where = "cluster-wide"
			}
			lists[r.Resource+" "+where]++
		}
	}
	return lists
}

// listsDuring counts, as countLists does, the lists nsman made while run
// ran.
func listsDuring(t *testing.T, e *nsmantest.Env, run func()) map[string]int {
	t.Helper()
	before, err := shared.AuditedRequests(t.Context(), e.User)
	if err != nil {
		t.Fatal(err)
	}
	run()
	after, err := shared.AuditedRequests(t.Context(), e.User)
	if err != nil {
		t.Fatal(err)
	}
	return countLists(after[len(before):])
}

// TestRuleConfirmsNamespaceByNamespaceWhenAListFails: when the Jobs cannot
// be listed cluster-wide (the proxy answers 503), the checks the index let
// pass are made namespace by namespace, with the same outcome, and the
// sweep does not fail.
func TestRuleConfirmsNamespaceByNamespaceWhenAListFails(t *testing.T) {
	e := setup(t)
	c := newConfirmCase(t)
	kubeconfig := e.KubeconfigThrough(t, func(p *httputil.ReverseProxy) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/apis/batch/v1/jobs" {
				http.Error(w, "unavailable", http.StatusServiceUnavailable)
				return
			}
			p.ServeHTTP(w, r)
		})
	})
	before, err := shared.AuditedRequests(t.Context(), e.User)
	if err != nil {
		t.Fatal(err)
	}
	res := e.Sweep(t, "--kubeconfig", kubeconfig, "-l", caseLabel+"="+c.home, "--trusted-namespaces", c.home, "--chunk-size", "100000")
	wantCode(t, res, 0)
	for i, ns := range c.targets[:confirmPassing] {
		p := res.Pair(t, c.home, "passed", ns)
		switch {
		case i == 1 && (p.State != report.StateWaiting || !strings.Contains(p.Message, "job next-suite has not finished")):
			t.Errorf("%s, with a Job that has not finished: %s (%s), want waiting on job next-suite", ns, p.State, p.Message)
		case i != 1 && p.State != report.StateFired:
			t.Errorf("%s, whose pods all succeeded: %s (%s), want fired", ns, p.State, p.Message)
		}
	}
	if got, want := len(c.recv.Deliveries()), confirmPassing-1; got != want {
		t.Errorf("%d webhooks delivered, want %d", got, want)
	}
	// The index; then each namespace it let pass by itself: its pods, then
	// its Jobs.
	wantLists(t, e, before, map[string]int{"pods cluster-wide": 1, "pods by namespace": confirmPassing, "jobs by namespace": confirmPassing})
}
