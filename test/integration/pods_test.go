package integration

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nsman/nsman/sweep"
	"github.com/nsman/nsman/test/nsmantest"
)

// Past sweep.PodIndexAfter pods checks, a sweep answers them from one
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
				podsPolicy("notify when "+suite+" passed", map[string]any{"suite": suite}, webhookAction(recv.URL+"/"+ns+"/"+name)),
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
		case fire && got.State != sweep.StateFired:
			t.Errorf("%s: %s (%s), want fired: every pod of its suite succeeded", id, got.State, got.Message)
		case !fire && (got.State != sweep.StateWaiting || !waitingOnPod.MatchString(got.Message)):
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
	// check the index lets pass does, to confirm it.
	checks := namespaces * suites
	if clusterWide < 1 {
		t.Errorf("no cluster-wide pods list after %d checks", checks)
	}
	if limit := sweep.PodIndexAfter + fires; perNamespace > limit || perNamespace < fires {
		t.Errorf("%d pods lists by namespace for %d checks, want between %d and %d", perNamespace, checks, fires, limit)
	}
	t.Logf("%d checks: %d pods lists by namespace, %d cluster-wide; %d fired", checks, perNamespace, clusterWide, fires)
}
