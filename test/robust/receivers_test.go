package robust

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nsman/nsman/sweep"
)

// TestHostileReceivers sends webhooks to receivers that hang, trickle bytes,
// answer with 10 MiB, redirect to the cloud metadata address or present an
// untrusted certificate, and to the metadata address itself: each receiver
// is reached, each is bounded in time and memory, refused where it must be,
// and recorded on its manager, and the rest of the sweep is unaffected.
func TestHostileReceivers(t *testing.T) {
	e := setup(t)
	bin := buildNsman(t)
	// reached counts the connections each hostile receiver accepted: a
	// receiver never reached showed nothing hostile.
	reached := map[string]*atomic.Int32{}
	hostile := func(name string, h http.Handler, tls bool) *httptest.Server {
		n := &atomic.Int32{}
		reached[name] = n
		s := httptest.NewUnstartedServer(h)
		s.Config.ConnState = func(_ net.Conn, state http.ConnState) {
			if state == http.StateNew {
				n.Add(1)
			}
		}
		if tls {
			s.StartTLS()
		} else {
			s.Start()
		}
		t.Cleanup(s.Close)
		return s
	}
	hang := hostile("hang", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second): // far beyond --webhook-timeout
		}
	}), false)
	trickle := hostile("trickle", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		for range 10 {
			if _, err := w.Write([]byte("x")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}), false)
	big := hostile("big", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("x", 1<<20))
		for range 10 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}), false)
	redirect := hostile("redirect", http.RedirectHandler("http://169.254.169.254/latest/meta-data/", http.StatusFound), false)
	untrusted := hostile("untrusted", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), true)

	const run = "receivers"
	cases := map[string]struct {
		url       string
		want      sweep.State
		wantInMsg string
	}{
		"hang":      {hang.URL + "/h", sweep.StateFailed, "after 3 attempts"},
		"trickle":   {trickle.URL + "/t", sweep.StateFired, ""}, // a 200 is the answer; the body is not waited for
		"big":       {big.URL + "/b", sweep.StateFired, ""},
		"redirect":  {redirect.URL + "/r", sweep.StateFailed, "302"},
		"untrusted": {untrusted.URL + "/u", sweep.StateFailed, "certificate"},
		"metadata":  {"http://169.254.169.254/latest/meta-data/", sweep.StateFailed, "refused"},
	}
	names := map[string]string{}
	for name, c := range cases {
		ns := shared.Namespace(t)
		names[name] = ns
		createManager(t, e, ns, run, 0, map[string]any{"type": "WEBHOOK", "params": map[string]any{"url": c.url}})
	}
	ordinary := shared.Namespace(t)
	createManager(t, e, ordinary, run, 0, map[string]any{"type": "DELETE"})

	began := time.Now()
	cmd := exec.Command(bin, "sweep", "--kubeconfig", e.Kubeconfig, "-l", "nsman.test/crash="+run, "--webhook-timeout", "1s", "-o", "json", "--log-level", "error")
	out, err := cmd.Output()
	took := time.Since(began)
	exit, ok := err.(*exec.ExitError)
	if !ok || exit.ExitCode() != 1 {
		t.Fatalf("exit %v, want status 1 for the failed webhooks", err)
	}
	var report sweep.Report
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatal(err)
	}
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KiB
	t.Logf("sweep took %s, peak RSS %d MiB", took.Round(time.Millisecond), rss/1024)
	if took > 20*time.Second {
		t.Errorf("sweep took %s: a hostile receiver held it", took)
	}
	if rss > 100*1024 {
		t.Errorf("peak RSS %d MiB: a response was read whole", rss/1024)
	}
	for name, c := range cases {
		ns := names[name]
		got := report.Entries[indexOf(t, report, ns)]
		if got.State != c.want || !strings.Contains(got.Message, c.wantInMsg) {
			t.Errorf("%s: %s (%s), want %s mentioning %q", name, got.State, got.Message, c.want, c.wantInMsg)
		}
		if c.want == sweep.StateFailed {
			st := e.Manager(t, ns, ns).Object["status"].(map[string]any)
			last, _ := st["lastAction"].(map[string]any)
			if last["result"] != sweep.ResultFailed || e.Deactivated(t, ns, ns) {
				t.Errorf("%s: status %v, want a failed lastAction and the manager active", name, st)
			}
		}
	}
	if got := report.Entries[indexOf(t, report, ordinary)]; got.State != sweep.StateFired {
		t.Errorf("the ordinary manager: %s (%s), want fired", got.State, got.Message)
	}
	for name, n := range reached {
		if n.Load() == 0 {
			t.Errorf("the %s receiver was never reached", name)
		}
	}
}

func indexOf(t *testing.T, r sweep.Report, ns string) int {
	t.Helper()
	for i, e := range r.Entries {
		if e.Namespace == ns {
			return i
		}
	}
	t.Fatalf("no entry for %s", ns)
	return -1
}
