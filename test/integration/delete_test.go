package integration

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// trustedDeleter creates, in the trusted namespace, a manager that deletes
// namespace target at once, and returns its name.
func trustedDeleter(t *testing.T, target string) string {
	t.Helper()
	home := nsmantest.ServiceAccountNamespace
	createManager(t, managerObj(home, target, target, []any{ttlPolicy("delete at once", 0, deleteAction)}, targeting(target)))
	t.Cleanup(func() {
		_ = env.Dynamic.Resource(cluster.ManagerResource).Namespace(home).Delete(context.Background(), target, metav1.DeleteOptions{})
	})
	return target
}

// isDelete reports a request to delete namespace ns.
func isDelete(r *http.Request, ns string) bool {
	return r.Method == http.MethodDelete && strings.HasSuffix(r.URL.Path, "/api/v1/namespaces/"+ns)
}

// A DELETE of another namespace is recorded, and its manager deactivated,
// though the manager changed between the sweep's listing and its record
// (here by a write made as the DELETE is answered; another sweep's view of
// the target does the same): the record reads the manager again and is
// written over the change, the spec being the same.
func TestDeleteRecordedOverAManagerChangedMeanwhile(t *testing.T) {
	e := setup(t)
	target := shared.Namespace(t)
	name := trustedDeleter(t, target)
	home := nsmantest.ServiceAccountNamespace
	kubeconfig := e.KubeconfigThrough(t, func(rp *httputil.ReverseProxy) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rp.ServeHTTP(w, r)
			if isDelete(r, target) {
				patch := []byte(`{"metadata":{"labels":{"nsman.test/touched":"yes"}}}`)
				if _, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(home).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
					t.Error(err)
				}
			}
		})
	})
	res := e.Sweep(t, "--kubeconfig", kubeconfig, "-l", caseLabel+"="+target)
	wantCode(t, res, 0)
	wantState(t, res, home, name, report.StateFired)
	if st := managerStatus(t, home, name); st.LastAction == nil || st.LastAction.Result != report.ResultSucceeded || !e.Deactivated(t, home, name) {
		t.Errorf("after the DELETE: lastAction %+v, deactivated %v; want recorded and deactivated", st.LastAction, e.Deactivated(t, home, name))
	}
}

// A DELETE as listed is sent once: an answer that asks client-go to retry
// (a 500 with Retry-After, which may follow a DELETE done) fails it, as
// uncertain, rather than being retried into a 409 that would take the
// sweep's own DELETE for someone else's and record nothing; the next sweep
// confirms it.
func TestDeleteAsListedIsNotRetried(t *testing.T) {
	e := setup(t)
	target := shared.Namespace(t)
	name := trustedDeleter(t, target)
	home := nsmantest.ServiceAccountNamespace
	var deletes int
	var mu sync.Mutex
	kubeconfig := e.KubeconfigThrough(t, func(rp *httputil.ReverseProxy) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !isDelete(r, target) {
				rp.ServeHTTP(w, r)
				return
			}
			mu.Lock()
			deletes++
			mu.Unlock()
			rp.ServeHTTP(httptest.NewRecorder(), r)
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"ServerTimeout","code":500,"details":{"retryAfterSeconds":1}}`))
		})
	})
	res := e.Sweep(t, "--kubeconfig", kubeconfig, "-l", caseLabel+"="+target)
	wantCode(t, res, 1)
	wantState(t, res, home, name, report.StateFailed)
	if deletes != 1 {
		t.Errorf("%d DELETEs sent, want one", deletes)
	}
	if st := managerStatus(t, home, name); st.LastAction == nil || !st.LastAction.Uncertain {
		t.Fatalf("lastAction %+v, want the DELETE recorded as failed without an answer", st.LastAction)
	}
	next := e.Sweep(t, "-l", caseLabel+"="+target)
	if got := wantState(t, next, home, name, report.StateFired); !strings.Contains(got.Message, "answer was lost") || !e.Deactivated(t, home, name) {
		t.Errorf("next sweep: %q, deactivated %v; want the DELETE confirmed", got.Message, e.Deactivated(t, home, name))
	}
}

// A 409 that is no precondition failure (an admission webhook may refuse
// with one) fails a DELETE, as listed or completing a claim: it is not
// taken for a namespace changed or recreated, nor recorded as done.
func TestConflictOfNoPreconditionFailsADelete(t *testing.T) {
	e := setup(t)
	fresh, claimed := shared.Namespace(t), shared.Namespace(t)
	caseID := fresh
	for _, ns := range []string{fresh, claimed} {
		createManager(t, managerObj(ns, ns, caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}))
	}
	listed, err := shared.Admin.CoreV1().Namespaces().Get(t.Context(), claimed, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setClaim(t, claimed, claimed, time.Now().Add(-time.Minute), listed.UID)
	kubeconfig := e.KubeconfigThrough(t, func(rp *httputil.ReverseProxy) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !isDelete(r, fresh) && !isDelete(r, claimed) {
				rp.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"admission webhook \"guard\" denied the request","code":409}`))
		})
	})
	res := e.Sweep(t, "--kubeconfig", kubeconfig, "-l", caseLabel+"="+caseID)
	wantCode(t, res, 1)
	for _, ns := range []string{fresh, claimed} {
		if got := wantState(t, res, ns, ns, report.StateFailed); !strings.Contains(got.Message, "denied the request") {
			t.Errorf("%s: %q, want the webhook's refusal", ns, got.Message)
		}
		if e.Deactivated(t, ns, ns) || e.NamespaceGoneOrTerminating(t, ns) {
			t.Errorf("%s: deleted or deactivated", ns)
		}
	}
}

// A manager whose action is recorded as done but whose deactivation failed
// (refused here) is deactivated by the next sweep, though its status has
// nothing left to change.
func TestDeactivationFailedOnceIsDoneNextSweep(t *testing.T) {
	e := setup(t)
	ns := shared.Namespace(t)
	recv := nsmantest.NewReceiver(t)
	createManager(t, managerObj(ns, ns, ns, []any{ttlPolicy("notify at once", 0, webhookAction(recv.ServiceURL(t, shared.Admin, ns, "sink")+"/hook"))}))
	kubeconfig := e.KubeconfigThrough(t, func(rp *httputil.ReverseProxy) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPatch && strings.HasSuffix(r.URL.Path, "/namespacemanagers/"+ns) {
				http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`, http.StatusForbidden)
				return
			}
			rp.ServeHTTP(w, r)
		})
	})
	for range 2 {
		// The action, then a completion: neither can deactivate.
		if res := e.Sweep(t, "--kubeconfig", kubeconfig, "-l", caseLabel+"="+ns); e.Deactivated(t, ns, ns) {
			t.Fatalf("deactivated through a proxy that refuses it: %+v", res.Report.Entries)
		}
	}
	res := e.Sweep(t, "-l", caseLabel+"="+ns)
	wantState(t, res, ns, ns, report.StateDeactivated)
	if !e.Deactivated(t, ns, ns) || len(recv.Deliveries()) != 1 {
		t.Errorf("deactivated %v, %d deliveries; want deactivated after one", e.Deactivated(t, ns, ns), len(recv.Deliveries()))
	}
}
