package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nsman/nsman/internal/reclaim"
	"github.com/nsman/nsman/internal/tell"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// requesting is a container that requests cpu and memory.
func requesting(name, cpu, memory string) corev1.Container {
	return corev1.Container{Name: name, Image: "registry.invalid/" + name + ":1", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}}}
}

// wantReclaimed checks what an entry, or a sum, says was freed.
func wantReclaimed(t *testing.T, what string, got *report.Reclaimed, cpu, memory, storage string, lbs int) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: nothing said of what was reclaimed", what)
		return
	}
	for _, q := range []struct {
		name      string
		got, want resource.Quantity
	}{{"cpu", got.CPU, resource.MustParse(cpu)}, {"memory", got.Memory, resource.MustParse(memory)}, {"storage", got.Storage, resource.MustParse(storage)}} {
		if q.got.Cmp(q.want) != 0 {
			t.Errorf("%s: %s %s, want %s", what, q.name, q.got.String(), q.want.String())
		}
	}
	if got.LoadBalancers != lbs {
		t.Errorf("%s: %d load balancers, want %d", what, got.LoadBalancers, lbs)
	}
}

// furnish fills namespace ns with what a DELETE frees and what it does
// not: pods not finished (one with an init container that asks for more
// than its containers, which counts instead), a pod that succeeded, two
// PVCs, a LoadBalancer Service and a ClusterIP one.
func furnish(t *testing.T, ns string) {
	t.Helper()
	ctx := t.Context()
	nsmantest.CreatePod(t, shared.Admin, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{requesting("web", "250m", "64Mi")}}}, corev1.PodRunning)
	nsmantest.CreatePod(t, shared.Admin, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec: corev1.PodSpec{InitContainers: []corev1.Container{requesting("migrate", "1", "16Mi")},
			Containers: []corev1.Container{requesting("db", "100m", "32Mi"), requesting("backup", "100m", "32Mi")}}}, corev1.PodPending)
	nsmantest.CreatePod(t, shared.Admin, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "done"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{requesting("done", "4", "4Gi")}}}, corev1.PodSucceeded)
	for name, size := range map[string]string{"data": "1Gi", "cache": "500Mi"} {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}}}
		if _, err := shared.Admin.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for name, typ := range map[string]corev1.ServiceType{"public": corev1.ServiceTypeLoadBalancer, "internal": corev1.ServiceTypeClusterIP} {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{Type: typ, Ports: []corev1.ServicePort{{Port: 80}}}}
		if _, err := shared.Admin.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReclaimed: a dry run says what a DELETE would free, the DELETE frees
// as much, and says so in its entry, the summary, the manager's status and
// the notification; a SCALE_DOWN frees what its workloads' pods requested.
func TestReclaimed(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	caseID := home
	target := shared.Namespace(t)
	furnish(t, target)
	createManager(t, managerObj(home, "deleter", caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}, targeting(target)))
	scaled := shared.Namespace(t)
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3),
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{requesting("web", "100m", "50Mi")}}}}}
	if _, err := shared.Admin.AppsV1().Deployments(scaled).Create(t.Context(), web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createManager(t, managerObj(home, "scaler", caseID, []any{ttlPolicy("scale at once", 0, scaleDownAction)}, targeting(scaled)))
	notify := nsmantest.NewReceiver(t)
	args := []string{"-l", caseLabel + "=" + caseID, "--trusted-namespaces", home, "--notify-url", notify.URL + "/nsman"}

	// What a DELETE frees: 250m + max(200m, 1) CPU, 64Mi + max(64Mi, 16Mi)
	// memory; the pod that succeeded frees nothing.
	dry := e.Sweep(t, append(args, "--dry-run")...)
	wantCode(t, dry, 0)
	wantReclaimed(t, "dry run's DELETE", wantState(t, dry, home, "deleter", report.StatePlanned).Reclaimed, "1250m", "128Mi", "1524Mi", 1)
	wantReclaimed(t, "dry run's SCALE_DOWN", wantState(t, dry, home, "scaler", report.StatePlanned).Reclaimed, "300m", "150Mi", "0", 0)
	wantReclaimed(t, "dry run's summary", dry.Report.Summary.Reclaimed, "1550m", "278Mi", "1524Mi", 1)
	if e.NamespaceGoneOrTerminating(t, target) {
		t.Fatal("the dry run deleted the namespace")
	}

	res := e.Sweep(t, args...)
	wantCode(t, res, 0)
	wantReclaimed(t, "DELETE", wantState(t, res, home, "deleter", report.StateFired).Reclaimed, "1250m", "128Mi", "1524Mi", 1)
	wantReclaimed(t, "SCALE_DOWN", wantState(t, res, home, "scaler", report.StateFired).Reclaimed, "300m", "150Mi", "0", 0)
	wantReclaimed(t, "summary", res.Report.Summary.Reclaimed, "1550m", "278Mi", "1524Mi", 1)
	if st := managerStatus(t, home, "deleter"); st.LastAction == nil {
		t.Error("the deleter's status has no last action")
	} else {
		wantReclaimed(t, "the deleter's status", st.LastAction.Reclaimed, "1250m", "128Mi", "1524Mi", 1)
	}
	told := map[string]*report.Reclaimed{}
	for _, d := range notify.Deliveries() {
		var n tell.Notification
		if err := json.Unmarshal(d.Body, &n); err != nil {
			t.Fatalf("notification %s: %v", d.Body, err)
		}
		told[n.Action] = n.Reclaimed
	}
	wantReclaimed(t, "the DELETE's notification", told["DELETE"], "1250m", "128Mi", "1524Mi", 1)
	wantReclaimed(t, "the SCALE_DOWN's notification", told["SCALE_DOWN"], "300m", "150Mi", "0", 0)
}

// TestReclaimedByManyDeletes: a rule that deletes more namespaces in one
// sweep than reclaim.ReclaimIndexAfter reads what they free from the
// cluster-wide lists past that many, and says the same of each as a read
// namespace by namespace would; --reclaim=false reads and says nothing.
func TestReclaimedByManyDeletes(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	caseID := home
	n := reclaim.ReclaimIndexAfter + 8
	targets := labelled(t, caseID, n)
	for i, ns := range targets {
		nsmantest.CreatePod(t, shared.Admin, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{requesting("web", fmt.Sprintf("%dm", 10*(i+1)), "1Mi")}}}, corev1.PodRunning)
	}
	createManager(t, managerObj(home, "reaper", caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}, selecting(caseID)))
	args := []string{"-l", caseLabel + "=" + caseID, "--trusted-namespaces", home}

	if off := e.Sweep(t, append(args, "--dry-run", "--reclaim=false")...); off.Report.Summary.Reclaimed != nil {
		t.Errorf("--reclaim=false: the summary says %+v was reclaimed", off.Report.Summary.Reclaimed)
	}
	res := e.Sweep(t, args...)
	wantCode(t, res, 0)
	total := 0
	for i, ns := range targets {
		p := res.Pair(t, home, "reaper", ns)
		if p.State != report.StateFired {
			t.Fatalf("rule on %s: %s (%s), want fired", ns, p.State, p.Message)
		}
		wantReclaimed(t, "DELETE of "+ns, p.Reclaimed, fmt.Sprintf("%dm", 10*(i+1)), "1Mi", "0", 0)
		total += 10 * (i + 1)
	}
	wantReclaimed(t, "summary", res.Report.Summary.Reclaimed, fmt.Sprintf("%dm", total), fmt.Sprintf("%dMi", n), "0", 0)
	if rule := managerStatus(t, home, "reaper"); rule.Rule == nil || len(rule.Rule.Latest) == 0 || rule.Rule.Latest[0].Reclaimed == nil {
		t.Errorf("rule's status %+v: want its latest actions to say what they freed", rule.Rule)
	}
}

// TestReclaimedTotalsOnAPushgateway: on a real Pushgateway, the reclaimed
// counters add each sweep's DELETEs to the totals pushed before; a dry
// run leaves them as they were.
func TestReclaimedTotalsOnAPushgateway(t *testing.T) {
	e := setup(t)
	gw := nsmantest.StartPushgateway(t)
	home := shared.Namespace(t)
	deleteOne := func(cpu string, dry bool) {
		t.Helper()
		target := shared.Namespace(t)
		nsmantest.CreatePod(t, shared.Admin, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: target, Name: "web"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{requesting("web", cpu, "1Gi")}}}, corev1.PodRunning)
		createManager(t, managerObj(home, target, target, []any{ttlPolicy("delete at once", 0, deleteAction)}, targeting(target)))
		args := []string{"-l", caseLabel + "=" + target, "--trusted-namespaces", home, "--pushgateway-url", gw}
		if dry {
			args = append(args, "--dry-run")
		}
		res := e.Sweep(t, args...)
		wantCode(t, res, 0)
		wantPushed(t, res)
		if strings.Contains(res.Stderr, "without the reclaimed totals") {
			t.Fatalf("the sweep left the totals out:\n%s", res.Stderr)
		}
	}
	deleteOne("500m", false)
	scrapePushgateway(t, gw).want(t, "nsman_reclaimed_cpu_cores_total", labels("action", "DELETE"), 0.5)
	deleteOne("1", true)
	deleteOne("250m", false)
	m := scrapePushgateway(t, gw)
	m.want(t, "nsman_reclaimed_cpu_cores_total", labels("action", "DELETE"), 0.75)
	m.want(t, "nsman_reclaimed_memory_bytes_total", labels("action", "DELETE"), 2*(1<<30))
	m.want(t, "nsman_reclaimed_cpu_cores_total", labels("action", "SCALE_DOWN"), 0)
	m.want(t, "nsman_namespaces_stuck", labels("reason", report.StuckFinalizersRemaining), 0)
}
