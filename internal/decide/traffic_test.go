package decide

import (
	"context"
	"testing"
	"time"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/policy/traffic"
	"github.com/nsman/nsman/report"
)

// fakeTraffic answers every namespace's traffic with answer, counting the
// reads.
type fakeTraffic struct {
	answer traffic.Answer
	reads  int
}

func (f *fakeTraffic) In(_ context.Context, _ string, c policy.Condition) traffic.Answer {
	f.reads++
	a := f.answer
	a.Source, a.Window = c.Traffic.Describe(), c.Idle
	return a
}

func idleOnTraffic(seconds int64, source map[string]any) map[string]any {
	c := idle(seconds)
	c["params"].(map[string]any)["traffic"] = source
	return c
}

// An IDLE policy with a traffic source reads it once the activity says
// idle: requests keep the target awake, none let it fire, and no answer
// (or no source to ask) keeps it waiting, the entry saying which; a
// manager outside the trusted namespaces may not bring a query of its own.
func TestEvaluateManagerIdleTraffic(t *testing.T) {
	nginx := map[string]any{"preset": "ingress-nginx"}
	idles := policies(pol("idle", idleOnTraffic(3600, nginx), deleteAction))
	listed := []cluster.Namespace{targetNS()}
	old := fakeActivity{last: policy.Activity{At: now.Add(-90 * time.Minute), What: "pod web-1 created"}}
	cases := []managerCase{
		{name: "requests in the window", obj: newManager(idles), listed: listed, act: old, traffic: &fakeTraffic{answer: traffic.Answer{Requests: 12}}, lists: 1, lasts: 1,
			want: want{state: report.StateWaiting, msg: "last activity: requests within 1h (traffic: preset ingress-nginx) at 2026-11-23T12:00:00Z", due: timeAt(time.Hour)}},
		{name: "none", obj: newManager(idles), listed: listed, act: old, traffic: &fakeTraffic{}, lists: 1, lasts: 1,
			want: want{policy: "idle", plan: &wantPlan{step: StepAct, policy: "idle", generation: 3, name: target, uid: "ns-uid-1",
				reason: "idle 1h since 2026-11-23T10:30:00Z (last activity: pod web-1 created); no requests in the last 1h (traffic: preset ingress-nginx)"}}},
		{name: "no answer", obj: newManager(idles), listed: listed, act: old, traffic: &fakeTraffic{answer: traffic.Answer{Unknown: "connection refused"}}, lists: 1, lasts: 1,
			want: want{state: report.StateWaiting, msg: "its traffic (preset ingress-nginx) is not known: connection refused; it waits for an answer"}},
		{name: "no source to ask", obj: newManager(idles), listed: listed, act: old, lists: 1, lasts: 1,
			want: want{state: report.StateWaiting, msg: "is not known: this sweep reads no traffic"}},
		{name: "a query, from an untrusted namespace", obj: newManager(livesIn(target, "cleanup"),
			policies(pol("idle", idleOnTraffic(3600, map[string]any{"query": "sum by (namespace) (increase(hits[$window]))"}), deleteAction))), listed: listed,
			want: want{state: report.StateForbidden, msg: "a manager in namespace preview-7 may read traffic only by a preset"}},
	}
	for _, c := range cases {
		runManagerCases(t, []managerCase{c})
		if c.traffic != nil && c.traffic.reads != 1 {
			t.Errorf("%s: traffic read %d times, want once", c.name, c.traffic.reads)
		}
	}
	c := cases[0]
	d := c.evaluator(new(int)).EvaluateManager(t.Context(), c.obj, c.stored, c.pods.check)
	if tr := d.Entry.Traffic; tr == nil || tr.Requests == nil || *tr.Requests != 12 || tr.WindowSeconds != 3600 || tr.Source != "preset ingress-nginx" {
		t.Errorf("the entry's traffic is %+v, want 12 requests in 3600s of preset ingress-nginx", tr)
	}
	c = cases[2]
	if d := c.evaluator(new(int)).EvaluateManager(t.Context(), c.obj, c.stored, c.pods.check); d.Entry.TrafficUnknown() != "connection refused" {
		t.Errorf("the entry's traffic is %+v, want it unknown", d.Entry.Traffic)
	}
}
