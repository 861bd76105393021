package execute

import (
	"errors"
	"testing"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/report"
)

// A SLEEP policy's transition is claimed, acted and recorded as any
// action, but is never a stage nor final: its record says whether the
// target is asleep (part-way when the sleep failed), and a wake that
// failed leaves it asleep. A freeze keeps an asleep target asleep.
func TestCarryOutSleep(t *testing.T) {
	deployments := func(replicas, record string) string {
		annotations := ""
		if record != "" {
			annotations = `,"annotations":{"` + status.ReplicasAnnotation + `":"` + record + `"}`
		}
		return `{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{},"items":[{"metadata":{"name":"web","namespace":"team-a","resourceVersion":"1"` + annotations + `},"spec":{"replicas":` + replicas + `}}]}`
	}
	boom := errors.New("admission webhook said no")
	for _, tt := range []struct {
		name     string
		wake     bool
		frozen   bool
		listed   string
		patchErr error
		// want: the entry's state and effects, the claims, and what the
		// record keeps of the sleep.
		state   report.State
		effect  string
		claims  int
		asleep  *status.Asleep
		woke    bool
		partial bool
	}{
		{name: "sleep", listed: deployments("2", ""), state: report.StateFired, effect: "scale Deployment/web from 2 to 0", claims: 1,
			asleep: &status.Asleep{Policy: "nights", Since: sweepNow}},
		{name: "a sleep that failed: asleep part-way", listed: deployments("2", ""), patchErr: boom, state: report.StateFailed, claims: 1,
			asleep: &status.Asleep{Policy: "nights", Since: sweepNow, Partial: true}},
		{name: "wake", wake: true, listed: deployments("0", "2"), state: report.StateFired, effect: "scale Deployment/web from 0 to 2", claims: 1, woke: true},
		{name: "a wake that failed: still asleep", wake: true, listed: deployments("0", "2"), patchErr: boom, state: report.StateFailed, claims: 1},
		{name: "a wake in a freeze: still asleep", wake: true, frozen: true, listed: deployments("0", "2"), state: report.StateAsleep},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bodies := discoveryBodies()
			bodies["/apis/apps/v1/namespaces/team-a/deployments"] = tt.listed
			w := newFakeWriter()
			w.done, w.patchErr = report.StateFired, tt.patchErr
			reads := emptyReader(t)
			reads.Clients.Kube = apiServer(t, bodies)
			x := newExecutor(t, w, reads)
			if tt.frozen {
				frozen(x)
			}
			rec := &fakeRecord{}
			e := x.CarryOut(t.Context(), rec, decision(sleeping(tt.wake)))
			if e.State != tt.state || tt.effect != "" && (len(e.Effects) != 1 || e.Effects[0] != tt.effect) || e.Woke != (tt.wake && !tt.frozen) {
				t.Errorf("entry %s %q (woke %t), effects %q; want %s, %q", e.State, e.Message, e.Woke, e.Effects, tt.state, tt.effect)
			}
			if len(rec.claims) != tt.claims || len(rec.writes) != 1 {
				t.Fatalf("%d claims, %d writes; want %d, 1", len(rec.claims), len(rec.writes), tt.claims)
			}
			o := rec.writes[0]
			if o.Done || o.Stage != "" || o.Woke != tt.woke || !sameAsleep(o.Asleep, tt.asleep) {
				t.Errorf("recorded done %t, stage %q, woke %t, asleep %+v; want not done, no stage, woke %t, asleep %+v", o.Done, o.Stage, o.Woke, o.Asleep, tt.woke, tt.asleep)
			}
		})
	}
}

func sameAsleep(a, b *status.Asleep) bool {
	return a == nil && b == nil || a != nil && b != nil && a.Policy == b.Policy && a.Since.Equal(b.Since) && a.Partial == b.Partial
}
