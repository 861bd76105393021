package integration

import (
	"strings"
	"testing"

	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// TestWebhookAllow: a sweep whose --webhook-allow does not cover a receiver
// sends it nothing and leaves its manager failed and active, with a message
// naming the host; a sweep whose list covers it, by name or by address,
// delivers. The receiver listens on 127.0.0.1; one manager calls it by that
// address, the other by the name localhost.
func TestWebhookAllow(t *testing.T) {
	e := setup(t)
	recv := nsmantest.NewReceiver(t)
	byIP, byName := shared.Namespace(t), shared.Namespace(t)
	caseID := byIP
	createManager(t, managerObj(byIP, byIP, caseID, []any{ttlPolicy("notify at once", 0, webhookAction(recv.URL+"/ip"))}))
	nameURL := strings.Replace(recv.URL, "127.0.0.1", "localhost", 1) + "/name"
	createManager(t, managerObj(byName, byName, caseID, []any{ttlPolicy("notify at once", 0, webhookAction(nameURL))}))

	wantRefused := func(t *testing.T, res nsmantest.Result, ns, host string) {
		t.Helper()
		msg := "host " + host + " is not in --webhook-allow"
		if entry := wantState(t, res, ns, ns, report.StateFailed); !strings.Contains(entry.Message, msg) {
			t.Errorf("manager %s: report message %q, want it to say %q", ns, entry.Message, msg)
		}
		if last := managerStatus(t, ns, ns).LastAction; last == nil || last.Result != report.ResultFailed || !strings.Contains(last.Message, msg) {
			t.Errorf("manager %s: status.lastAction %+v, want a failure saying %q", ns, last, msg)
		}
		if e.Deactivated(t, ns, ns) {
			t.Errorf("manager %s deactivated after its webhook was refused", ns)
		}
	}

	// Neither the address nor the name is covered; the name resolves to
	// 127.0.0.1 and ::1, outside the CIDRs, and is refused in the dialer.
	res := e.Sweep(t, "-l", caseLabel+"="+caseID, "--webhook-allow=10.0.0.0/8,fd00::/8,hook.example.com,*.localhost")
	wantCode(t, res, 1)
	wantRefused(t, res, byIP, "127.0.0.1")
	wantRefused(t, res, byName, "localhost")
	if n := len(recv.Deliveries()); n != 0 {
		t.Fatalf("receiver got %d requests from a sweep whose --webhook-allow does not cover it, want 0", n)
	}

	// The name is allowed; an IP address is never allowed by a name.
	letBackoffPass(t, byIP, byIP)
	letBackoffPass(t, byName, byName)
	res = e.Sweep(t, "-l", caseLabel+"="+caseID, "--webhook-allow", "localhost")
	wantCode(t, res, 1)
	wantState(t, res, byName, byName, report.StateFired)
	wantRefused(t, res, byIP, "127.0.0.1")
	if !e.Deactivated(t, byName, byName) {
		t.Errorf("manager %s not deactivated after its webhook was delivered", byName)
	}

	// The address is in a CIDR.
	letBackoffPass(t, byIP, byIP)
	res = e.Sweep(t, "-l", caseLabel+"="+caseID, "--webhook-allow", "127.0.0.0/8")
	wantCode(t, res, 0)
	wantState(t, res, byIP, byIP, report.StateFired)
	if !e.Deactivated(t, byIP, byIP) {
		t.Errorf("manager %s not deactivated after its webhook was delivered", byIP)
	}

	deliveries := recv.Deliveries()
	if len(deliveries) != 2 {
		t.Fatalf("receiver got %d requests, want 2: one per manager, once allowed", len(deliveries))
	}
	for _, d := range deliveries {
		if !strings.Contains(string(d.Body), `"namespace":"`+byIP+`"`) && !strings.Contains(string(d.Body), `"namespace":"`+byName+`"`) {
			t.Errorf("delivery %s is for neither manager", d.Body)
		}
	}

	// A bad entry stops the sweep before it lists anything.
	res = e.Sweep(t, "-l", caseLabel+"="+caseID, "--webhook-allow", "10.0.0.1/8")
	wantCode(t, res, 2)
	if !strings.Contains(res.Stderr, `--webhook-allow: entry "10.0.0.1/8"`) {
		t.Errorf("stderr %q, want it to name the bad entry", res.Stderr)
	}
}
