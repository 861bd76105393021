package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

func failedPolicy(name string, podLabels map[string]any, action map[string]any) map[string]any {
	return map[string]any{
		"name":      name,
		"condition": map[string]any{"type": "PODS_FAILED", "params": map[string]any{"podLabels": podLabels, "initialDelaySeconds": int64(0)}},
		"action":    action,
	}
}

// TestPodsFailed: a PODS_FAILED policy waits while the matching pods run or
// succeed, holds once one is in phase Failed, and holds for a Job that
// failed by running out of time, whose pods the Job controller deleted
// rather than failed.
func TestPodsFailed(t *testing.T) {
	e := setup(t)
	quiet, failedPod, failedJob := shared.Namespace(t), shared.Namespace(t), shared.Namespace(t)
	caseID := quiet
	recv := nsmantest.NewReceiver(t)
	role := map[string]string{"role": "e2e"}
	podWithPhase(t, quiet, "running", role, corev1.PodRunning)
	podWithPhase(t, quiet, "passed", role, corev1.PodSucceeded)
	podWithPhase(t, failedPod, "passed", role, corev1.PodSucceeded)
	podWithPhase(t, failedPod, "broke", role, corev1.PodFailed)
	podWithPhase(t, failedPod, "unrelated", map[string]string{"role": "other"}, corev1.PodFailed)

	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e"},
		Spec: batchv1.JobSpec{
			ActiveDeadlineSeconds: ptr.To[int64](1),
			BackoffLimit:          ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: role},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					// Scheduled to a kwok node, which deletes the pod when the
					// Job controller asks: a Job fails only once its pods are gone.
					NodeSelector: map[string]string{"type": "kwok"},
					Tolerations:  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					Containers:   []corev1.Container{{Name: "main", Image: "registry.invalid/e2e:1"}},
				},
			},
		},
	}
	if _, err := shared.Admin.BatchV1().Jobs(failedJob).Create(t.Context(), job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		j, err := shared.Admin.BatchV1().Jobs(failedJob).Get(ctx, "e2e", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the Job did not fail: %v", err)
	}

	for _, ns := range []string{quiet, failedPod, failedJob} {
		createManager(t, managerObj(ns, ns, caseID, []any{
			failedPolicy("report a failure", map[string]any{"role": "e2e"}, webhookAction(recv.ServiceURL(t, shared.Admin, ns, "sink")+"/"+ns)),
			ttlPolicy("delete in a day", 86400, deleteAction),
		}))
	}
	res := e.Sweep(t, "-l", caseLabel+"="+caseID)
	wantCode(t, res, 0)
	if got := wantState(t, res, quiet, quiet, report.StateWaiting); !strings.Contains(got.Message, "no pod matching role=e2e has failed") {
		t.Errorf("quiet namespace: %q", got.Message)
	}
	if got := wantState(t, res, failedPod, failedPod, report.StateFired); got.Message != "a pod matching role=e2e failed: pod broke failed" {
		t.Errorf("failed pod: %q", got.Message)
	}
	if got := wantState(t, res, failedJob, failedJob, report.StateFired); got.Message != "a pod matching role=e2e failed: job e2e failed" {
		t.Errorf("failed Job: %q", got.Message)
	}
	if n := len(recv.Deliveries()); n != 2 {
		t.Errorf("%d deliveries, want 2", n)
	}
}

// TestPodsFailedFromTheIndex: past PodIndexAfter checks, PODS_FAILED is
// answered from one cluster-wide list of failed pods and failed Jobs, both
// ways, with the same words as a check of its own.
func TestPodsFailedFromTheIndex(t *testing.T) {
	e := setup(t)
	n := probe.PodIndexAfter + 100
	caseID := ""
	failing := map[string]bool{}
	for i := range n {
		ns := shared.Namespace(t)
		if caseID == "" {
			caseID = ns
		}
		if i%2 == 0 {
			podWithPhase(t, ns, "broke", map[string]string{"role": "e2e"}, corev1.PodFailed)
			failing[ns] = true
		}
		createManager(t, managerObj(ns, ns, caseID, []any{failedPolicy("report a failure", map[string]any{"role": "e2e"}, deleteAction)}))
	}
	before := len(e.Writes(t))
	// --reclaim=false: the requests counted are the checks' alone, not
	// those of what the planned DELETEs would free.
	res := e.Sweep(t, "-l", caseLabel+"="+caseID, "--dry-run", "--reclaim=false")
	wantCode(t, res, 0)
	for ns := range failing {
		if got := wantState(t, res, ns, ns, report.StatePlanned); got.Message != "a pod matching role=e2e failed: pod broke failed" {
			t.Errorf("%s: %q", ns, got.Message)
		}
	}
	if got := res.Report.Summary.States[report.StateWaiting]; got != n-len(failing) {
		t.Errorf("%d waiting, want %d", got, n-len(failing))
	}
	if w := e.Writes(t)[before:]; len(w) != 0 {
		t.Errorf("a dry run wrote %d times", len(w))
	}
	// Per-namespace checks stop at the threshold: at most two requests
	// each (failed pods, then Jobs), then the index's lists. Checked one by
	// one, the 200 would take 300.
	if gets := res.Report.Summary.Requests["get"]; gets > 2*probe.PodIndexAfter+20 {
		t.Errorf("%d list requests for %d checks: the index was not used", gets, n)
	}
}
