package robust

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// hostileBytes is about what a tenant can make one object weigh (the API
// server takes up to 1.5 MiB).
const hostileBytes = 1 << 20

// padding is n bytes of container arguments, where an object's bulk is not
// capped by the 256 KiB of its annotations.
func padding(n int) []string {
	return []string{strings.Repeat("x", n/2), strings.Repeat("y", n/2)}
}

// TestHostileTenantMemory: a tenant namespace holds 24 Jobs and 12
// Deployments of about 1 MB each, 20 PODS_SUCCEED managers of 200 KiB
// (which the suspended Jobs keep waiting, so every check reads the Jobs)
// and a SCALE_DOWN that is due. The sweep does its work within the peak
// RSS the chart's 128Mi leaves room for (96 MiB), and reads the
// namespace's Jobs once, paged, however many managers check them.
func TestHostileTenantMemory(t *testing.T) {
	e := setup(t)
	bin := buildNsman(t)
	run := fmt.Sprintf("memory-%d", time.Now().UnixNano())
	ns := shared.Namespace(t)
	const jobs, deployments, managers = 24, 12, 20
	for i := range jobs {
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("suite-%02d", i)}, Spec: batchv1.JobSpec{
			Suspend: ptr.To(true),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "e2e"}},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
					Name: "main", Image: "registry.invalid/e2e:1", Args: padding(hostileBytes)}}},
			},
		}}
		if _, err := shared.Admin.BatchV1().Jobs(ns).Create(t.Context(), job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range deployments {
		d := nsmantest.Deployment(fmt.Sprintf("web-%02d", i), 1)
		d.Spec.Template.Spec.Containers[0].Args = padding(hostileBytes)
		if _, err := shared.Admin.AppsV1().Deployments(ns).Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pad := strings.Repeat("z", 200<<10)
	for i := range managers {
		m := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "k8s.consol.de/v1beta1",
			"kind":       "NamespaceManager",
			"metadata": map[string]any{"namespace": ns, "name": fmt.Sprintf("suite-%02d", i),
				"labels": map[string]any{"nsman.test/crash": run}, "annotations": map[string]any{"padding": pad}},
			"spec": map[string]any{"namespace": ns, "policies": []any{map[string]any{
				"name":      "when the suites passed",
				"condition": map[string]any{"type": "PODS_SUCCEED", "params": map[string]any{"initialDelaySeconds": int64(0), "podLabels": map[string]any{"app": "e2e"}}},
				"action":    map[string]any{"type": "DELETE"},
			}}},
		}}
		if _, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(ns).Create(t.Context(), m, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	scaleDown := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.consol.de/v1beta1",
		"kind":       "NamespaceManager",
		"metadata":   map[string]any{"namespace": ns, "name": "night", "labels": map[string]any{"nsman.test/crash": run}},
		"spec": map[string]any{"namespace": ns, "policies": []any{map[string]any{
			"name":      "scale down",
			"condition": map[string]any{"type": "TTL", "params": map[string]any{"ttlSeconds": int64(0)}},
			"action":    map[string]any{"type": "SCALE_DOWN"},
		}}},
	}}
	if _, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(ns).Create(t.Context(), scaleDown, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	before, err := shared.AuditedRequests(t.Context(), e.User)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	res, err := nsmantest.Launch(t.Context(), &stdout, &stderr, bin, "sweep", "--kubeconfig", e.Kubeconfig, "-l", "nsman.test/crash="+run, "-o", "json", "--log-level", "warn")
	if err != nil || res.Code != 0 {
		t.Fatalf("exit %d (%v), want 0\n%s", res.Code, err, stderr.String())
	}
	var rep report.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	rss := res.MaxRSS >> 10 // MiB
	t.Logf("sweep took %s, peak RSS %d MiB", res.Wall.Round(time.Millisecond), rss)
	if rss > 96 {
		t.Errorf("peak RSS %d MiB, want at most 96: a list of a tenant's objects was held whole", rss)
	}
	for _, got := range rep.Entries {
		want := report.StateWaiting
		if got.Name == "night" {
			want = report.StateFired
		}
		if got.State != want || want == report.StateWaiting && !strings.Contains(got.Message, "has not finished") {
			t.Errorf("%s: %s (%s), want %s", got.Name, got.State, got.Message, want)
		}
	}
	if len(rep.Entries) != managers+1 {
		t.Errorf("%d entries, want %d", len(rep.Entries), managers+1)
	}
	scaled := 0
	for i := range deployments {
		d, err := shared.Admin.AppsV1().Deployments(ns).Get(t.Context(), fmt.Sprintf("web-%02d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ptr.Deref(d.Spec.Replicas, 1) == 0 && d.Annotations[status.ReplicasAnnotation] == "1" {
			scaled++
		}
	}
	if scaled != deployments {
		t.Errorf("%d of %d Deployments scaled down", scaled, deployments)
	}
	after, err := shared.AuditedRequests(t.Context(), e.User)
	if err != nil {
		t.Fatal(err)
	}
	jobLists := 0
	for _, r := range after[len(before):] {
		if r.Verb == "list" && r.Resource == "jobs" {
			jobLists++
		}
	}
	if jobLists != 1 {
		t.Errorf("%d lists of Jobs for %d managers of one namespace, want 1", jobLists, managers)
	}
}
