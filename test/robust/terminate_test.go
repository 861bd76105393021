package robust

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os/exec"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/sweep"
	"github.com/nsman/nsman/test/nsmantest"
)

// TestSIGTERMFinishesWhatIsUnderWay interrupts a sweep while its first
// webhook is being delivered: that delivery completes and is recorded, no
// other action starts, no claim is left on an active manager, and the process exits
// promptly with status 1 after printing what it did.
func TestSIGTERMFinishesWhatIsUnderWay(t *testing.T) {
	e := setup(t)
	bin := buildNsman(t)
	arrived := make(chan struct{}, 10)
	delivered := make(chan string, 10)
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		time.Sleep(2 * time.Second)
		delivered <- r.Header.Get("Idempotency-Key")
	})

	var names []string
	for range 3 {
		ns := shared.Namespace(t)
		names = append(names, ns)
		// The managers are tenants': each calls the slow receiver as a
		// Service of its own namespace.
		url := nsmantest.ServeAsService(t, shared.Admin, ns, "slow", slow, nil)
		m := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "k8s.consol.de/v1beta1",
			"kind":       "NamespaceManager",
			"metadata":   map[string]any{"namespace": ns, "name": ns, "labels": map[string]any{"nsman.test/terminate": names[0]}},
			"spec": map[string]any{"policies": []any{map[string]any{
				"name":      "notify at once",
				"condition": map[string]any{"type": "TTL", "params": map[string]any{"ttlSeconds": int64(0)}},
				"action":    map[string]any{"type": "WEBHOOK", "params": map[string]any{"url": url + "/hook"}},
			}}},
		}}
		if _, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(ns).Create(t.Context(), m, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	cmd := exec.Command(bin, "sweep", "-o", "json", "--kubeconfig", e.Kubeconfig, "-l", "nsman.test/terminate="+names[0], "--concurrency", "1", "--log-level", "warn")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("no webhook arrived:\n%s", stderr.String())
	}
	signalled := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	took := time.Since(signalled)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit %v after SIGTERM, want status 1\n%s", err, stderr.String())
	}
	if took > sweep.DefaultInterruptGrace {
		t.Errorf("exited %s after SIGTERM, want within %s", took, sweep.DefaultInterruptGrace)
	}
	t.Logf("exited %s after SIGTERM", took.Round(time.Millisecond))

	var rep report.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("no report after SIGTERM: %v\n%s", err, stdout.String())
	}
	if got := rep.Summary.States; got[report.StateFired] != 1 || got[report.StateDeferred]+got[report.StateFired] != len(names) {
		t.Errorf("states %v, want 1 fired and the rest deferred", got)
	}
	if n := len(delivered); n != 1 {
		t.Errorf("%d deliveries completed, want 1", n)
	}
	if n := len(arrived); n != 0 {
		t.Errorf("%d more webhooks started after SIGTERM", n)
	}
	// The delivered one is deactivated with its success recorded; no
	// manager holds a claim that would make the next sweep wait for it to
	// expire.
	deactivated := 0
	for _, ns := range names {
		m := e.Manager(t, ns, ns)
		if claim, _, _ := unstructured.NestedMap(m.Object, "status", "claim"); claim != nil {
			t.Errorf("manager %s holds a claim after the sweep exited: %v", ns, claim)
		}
		if e.Deactivated(t, ns, ns) {
			deactivated++
			if result, _, _ := unstructured.NestedString(m.Object, "status", "lastAction", "result"); result != report.ResultSucceeded {
				t.Errorf("deactivated manager %s: lastAction result %q, want succeeded", ns, result)
			}
		}
	}
	if deactivated != 1 {
		t.Errorf("%d managers deactivated, want the one whose webhook was delivered", deactivated)
	}
}
