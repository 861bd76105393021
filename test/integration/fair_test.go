package integration

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nsman/nsman/report"
)

// --max-actions goes round-robin across the namespaces acted on, a rule's
// pairs by their namespace: a namespace of ten due managers, listed first,
// takes one place as the others do, and the rule, handled last, is not
// left without.
func TestMaxActionsAreSharedAcrossNamespaces(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	caseID := home
	tenants := []string{shared.Namespace(t), shared.Namespace(t), shared.Namespace(t)}
	slices.Sort(tenants) // the first is listed first
	many := tenants[0]
	deleteNow := []any{ttlPolicy("delete at once", 0, deleteAction)}
	for i := range 10 {
		createManager(t, managerObj(many, fmt.Sprintf("m%02d", i), caseID, deleteNow, func(spec map[string]any) { spec["namespace"] = many }))
	}
	for _, ns := range tenants[1:] {
		createManager(t, managerObj(ns, ns, caseID, deleteNow))
	}
	ruled := labelled(t, home, 2)
	createManager(t, managerObj(home, "rule", caseID, deleteNow, selecting(home)))
	namespaces := append(slices.Clone(tenants), ruled...)

	for sweepNo := range 2 {
		res := e.Sweep(t, "-l", caseLabel+"="+caseID, "--trusted-namespaces", home, "--dry-run", "--max-actions", fmt.Sprint(len(namespaces)))
		wantCode(t, res, 0)
		planned := map[string]int{}
		for _, entry := range res.Report.Entries {
			if entry.State == report.StatePlanned {
				planned[entry.Target]++
			}
		}
		for _, ns := range namespaces {
			if planned[ns] != 1 {
				t.Errorf("sweep %d: %d action(s) planned in namespace %s, want 1 in each of %d namespaces (planned: %v)", sweepNo, planned[ns], ns, len(namespaces), planned)
			}
		}
		if got := res.Report.Summary.States; got[report.StateDeferred] != 10+2+2-len(namespaces) {
			t.Errorf("sweep %d: states %v, want %d deferred", sweepNo, got, 10+2+2-len(namespaces))
		}
	}
}

// A subject granted a place under --max-actions is evaluated again just
// before it acts: a pod started since its first evaluation keeps its
// namespace, a manager's or a rule's.
func TestMaxActionsActOnFreshReads(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	caseID := home
	managed := shared.Namespace(t)
	ruled := labelled(t, home, 1)[0]
	main := map[string]string{"component": "main"}
	deleteWhenDone := []any{podsPolicy("delete when tests pass", map[string]any{"component": "main"}, deleteAction)}
	createManager(t, managerObj(managed, managed, caseID, deleteWhenDone))
	createManager(t, managerObj(home, "rule", caseID, deleteWhenDone, selecting(home)))
	for _, ns := range []string{managed, ruled} {
		podWithPhase(t, ns, "done", main, corev1.PodSucceeded)
	}
	kubeconfig := e.KubeconfigThrough(t, func(rp *httputil.ReverseProxy) http.Handler {
		var mu sync.Mutex
		started := map[string]bool{}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ns := namespaceOfPath(r.URL.Path)
			mu.Lock()
			first := r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/pods") && (ns == managed || ns == ruled) && !started[ns]
			started[ns] = started[ns] || first
			mu.Unlock()
			if !first {
				rp.ServeHTTP(w, r)
				return
			}
			// The first read of its pods is answered once a pod has started.
			rec := httptest.NewRecorder()
			rp.ServeHTTP(rec, r)
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "late", Labels: main},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.invalid/test:1"}}}}
			if _, err := shared.Admin.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
				t.Errorf("start a pod in %s: %v", ns, err)
			}
			maps.Copy(w.Header(), rec.Header())
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
		})
	})
	res := e.Sweep(t, "--kubeconfig", kubeconfig, "-l", caseLabel+"="+caseID, "--trusted-namespaces", home, "--max-actions", "2")
	wantCode(t, res, 0)
	if got := wantState(t, res, managed, managed, report.StateWaiting); !strings.Contains(got.Message, "pod late") {
		t.Errorf("manager: %s, want it waiting on pod late", got.Message)
	}
	if p := res.Pair(t, home, "rule", ruled); p.State != report.StateWaiting || !strings.Contains(p.Message, "pod late") {
		t.Errorf("rule on %s: %s (%s), want waiting on pod late", ruled, p.State, p.Message)
	}
	for _, ns := range []string{managed, ruled} {
		if e.NamespaceGoneOrTerminating(t, ns) {
			t.Errorf("namespace %s deleted with a pod started", ns)
		}
	}
}
