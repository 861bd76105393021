package integration

import (
	"fmt"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// kedaPausedReplicas is KEDA's annotation that holds a ScaledObject's
// target at that many replicas.
const kedaPausedReplicas = "autoscaling.keda.sh/paused-replicas"

// createCronJob creates CronJob name in ns, suspended or not.
func createCronJob(t *testing.T, ns, name string, suspended bool) {
	t.Helper()
	createCronJobWith(t, shared.Admin, ns, name, suspended)
}

func createCronJobWith(t *testing.T, admin kubernetes.Interface, ns, name string, suspended bool) {
	t.Helper()
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", Suspend: ptr.To(suspended), JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "main", Image: "registry.invalid/report:1"}}}},
		}}},
	}
	if _, err := admin.BatchV1().CronJobs(ns).Create(t.Context(), cj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createCustom creates an object of a fixture CRD's resource in ns.
func createCustom(t *testing.T, ns string, obj map[string]any) {
	t.Helper()
	createCustomWith(t, env.Dynamic, ns, obj)
}

func createCustomWith(t *testing.T, dyn dynamic.Interface, ns string, obj map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	resource := nsmantest.ScaledObjectResource
	if u.GetKind() == "Rollout" {
		resource = nsmantest.RolloutResource
	}
	if _, err := dyn.Resource(resource).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// parkingEveryKind installs the fixture CRDs and puts in ns a CronJob, a
// KEDA ScaledObject, an Argo Rollout and a Service of type LoadBalancer,
// and returns a manager of caseID that scales them down at once, parking
// the LoadBalancer (loadBalancers): the kinds beyond Deployments and
// StatefulSets the shipped ClusterRole names.
func parkingEveryKind(t *testing.T, admin kubernetes.Interface, dyn dynamic.Interface, ns, caseID string) *unstructured.Unstructured {
	t.Helper()
	nsmantest.InstallFixtureCRDs(t, dyn)
	createCronJobWith(t, admin, ns, "report", false)
	createCustomWith(t, dyn, ns, map[string]any{"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": map[string]any{"name": "queue"},
		"spec": map[string]any{"scaleTargetRef": map[string]any{"name": "web"}}})
	createCustomWith(t, dyn, ns, map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "metadata": map[string]any{"name": "canary"},
		"spec": map[string]any{"replicas": int64(1)}})
	if _, err := admin.CoreV1().Services(ns).Create(t.Context(), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "edge"}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return managerObj(ns, ns, caseID, []any{ttlPolicy("park at once", 0, map[string]any{"type": "SCALE_DOWN", "params": map[string]any{"loadBalancers": true, "selectors": []any{
		map[string]any{"kind": "CronJob"}, map[string]any{"kind": "ScaledObject"}, map[string]any{"kind": "Rollout"},
	}}})})
}

// kindsState is what nsman changes of each workload of the kinds test, as
// one line per workload.
func kindsState(t *testing.T, ns string) string {
	t.Helper()
	var lines []string
	record := func(a map[string]string, key string) string {
		if v, ok := a[key]; ok {
			return fmt.Sprintf(" record %q", v)
		}
		return ""
	}
	for _, name := range []string{"web", "pinned"} {
		d, err := shared.Admin.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, fmt.Sprintf("Deployment/%s %d%s", name, *d.Spec.Replicas, record(d.Annotations, status.ReplicasAnnotation)))
	}
	for _, name := range []string{"report", "paused"} {
		cj, err := shared.Admin.BatchV1().CronJobs(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, fmt.Sprintf("CronJob/%s suspend %v%s", name, *cj.Spec.Suspend, record(cj.Annotations, status.SuspendAnnotation)))
	}
	for _, name := range []string{"queue", "batch"} {
		so, err := env.Dynamic.Resource(nsmantest.ScaledObjectResource).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		paused, ok := so.GetAnnotations()[kedaPausedReplicas]
		if !ok {
			paused = "none"
		}
		lines = append(lines, fmt.Sprintf("ScaledObject/%s paused %s%s", name, paused, record(so.GetAnnotations(), status.PausedReplicasAnnotation)))
	}
	ro, err := env.Dynamic.Resource(nsmantest.RolloutResource).Namespace(ns).Get(t.Context(), "canary", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	replicas, _, _ := unstructured.NestedInt64(ro.Object, "spec", "replicas")
	lines = append(lines, fmt.Sprintf("Rollout/canary %d%s", replicas, record(ro.GetAnnotations(), status.ReplicasAnnotation)))
	return strings.Join(lines, "\n")
}

// A SCALE_DOWN whose selectors name CronJobs, KEDA ScaledObjects and a
// custom kind with a scale subresource puts each to sleep its own way,
// under nsman's ServiceAccount and admission policy, and nsman restore
// brings back exactly what each had: a CronJob suspended before stays
// suspended, a ScaledObject's earlier pause comes back or goes, and a
// workload labelled keep-awake is never touched.
func TestScaleDownKindsAndRestore(t *testing.T) {
	e := setup(t)
	nsmantest.InstallFixtureCRDs(t, env.Dynamic)
	ns := shared.Namespace(t)
	createDeployment(t, ns, "web", 2)
	pinned := nsmantest.Deployment("pinned", 1)
	pinned.Labels = map[string]string{status.KeepAwakeLabel: "true"}
	if _, err := shared.Admin.AppsV1().Deployments(ns).Create(t.Context(), pinned, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createCronJob(t, ns, "report", false)
	createCronJob(t, ns, "paused", true)
	scaledObject := func(name string, annotations map[string]any) map[string]any {
		return map[string]any{"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
			"metadata": map[string]any{"name": name, "annotations": annotations},
			"spec":     map[string]any{"scaleTargetRef": map[string]any{"name": "web"}, "triggers": []any{map[string]any{"type": "cron"}}}}
	}
	createCustom(t, ns, scaledObject("queue", nil))
	createCustom(t, ns, scaledObject("batch", map[string]any{kedaPausedReplicas: "2"}))
	createCustom(t, ns, map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
		"metadata": map[string]any{"name": "canary"}, "spec": map[string]any{"replicas": int64(3)}})
	before := kindsState(t, ns)

	action := map[string]any{"type": "SCALE_DOWN", "params": map[string]any{"selectors": []any{
		map[string]any{"kind": "deployment"}, map[string]any{"kind": "CronJob"}, map[string]any{"kind": "scaledobject"}, map[string]any{"kind": "Rollout.argoproj.io"},
	}}}
	createManager(t, managerObj(ns, ns, ns, []any{ttlPolicy("park at once", 0, action)}))
	res := e.Sweep(t, "-l", caseLabel+"="+ns)
	wantCode(t, res, 0)
	fired := wantState(t, res, ns, ns, report.StateFired)
	asleep := kindsState(t, ns)
	want := strings.Join([]string{
		`Deployment/web 0 record "2"`, `Deployment/pinned 1`,
		`CronJob/report suspend true record "false"`, `CronJob/paused suspend true`,
		`ScaledObject/queue paused 0 record ""`, `ScaledObject/batch paused 0 record "2"`,
		`Rollout/canary 0 record "3"`,
	}, "\n")
	if asleep != want {
		t.Errorf("after the SCALE_DOWN:\n%s\nwant\n%s\n(effects %q)", asleep, want, fired.Effects)
	}

	out, code := runRestore(t, ns)
	if code != 0 {
		t.Fatalf("nsman restore -n %s: exit %d\n%s", ns, code, out)
	}
	if got := kindsState(t, ns); got != before {
		t.Errorf("after nsman restore:\n%s\nwant what each had before:\n%s\n(restore said %s)", got, before, out)
	}
	for _, said := range []string{"resume CronJob/report", "unpause ScaledObject/queue", "pause ScaledObject/batch at 2 replicas again, as before", "scale Rollout/canary from 0 to 3"} {
		if !strings.Contains(out, said) {
			t.Errorf("nsman restore said %q, want %q in it", out, said)
		}
	}
}
