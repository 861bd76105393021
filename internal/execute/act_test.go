package execute

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nsman/nsman/internal/cluster/clustertest"
	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/internal/reclaim"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/webhook"
)

var namespacesResource = corev1.Resource("namespaces")

// completing is a decision to complete the expired claim of sweep-0.
func completing(d *decide.Decision) {
	d.Plan.Step, d.Plan.Reason = decide.StepCompleteClaim, "completing the expired claim of sweep-0"
}

// recreated: the namespace of the claim's name is not the one it was made for.
func recreated(d *decide.Decision) { d.Plan.Target.Recreated = true }

// failedTwice: the record says the policy's WEBHOOK failed twice in a row.
var failedTwice = status.Prior{Last: &status.LastAction{Policy: "expire", Action: policy.ActionWebhook, Result: report.ResultFailed, Failures: 2}}

// act claims an action unless it is a fresh DELETE, carries it out and
// records its outcome, and reports whether it acted and recorded.
func TestAct(t *testing.T) {
	hook := webhookTo("http://hooks.example.com/x")
	for _, tt := range []struct {
		name               string
		d                  decide.Decision
		prior              status.Prior
		claimErr, writeErr error
		deleteErr          error
		deliverErr         error
		// want: the entry's state, a part of its message and its effects,
		// the claims made, the record's writes and the DELETEs sent, with
		// the resourceVersion of the first; acted and recorded.
		state                   report.State
		message                 string
		effects                 []string
		claims, writes, deletes int
		resourceVersion         string
		acted, recorded         bool
		// last: the record's last action, when written: its result, its
		// failures and next attempt (0: none), deferred.
		result   string
		failures int
		next     time.Duration
		deferred bool
	}{
		{name: "a fresh DELETE of the record's namespace: no claim, no record", d: decision(),
			state: report.StatePlanned, message: "expired", effects: []string{"delete namespace team-a"}, deletes: 1, resourceVersion: "7", acted: true, recorded: true},
		{name: "a fresh DELETE of another namespace: recorded", d: decision(notHome),
			state: report.StatePlanned, message: "expired", effects: []string{"delete namespace team-a"}, writes: 1, deletes: 1, resourceVersion: "7", acted: true, recorded: true,
			result: report.ResultSucceeded},
		{name: "a fresh DELETE of a namespace changed and gone since: busy", d: decision(), deleteErr: apierrors.NewConflict(namespacesResource, "team-a", nil),
			state: report.StateBusy, message: "changed since this sweep listed it", deletes: 1, resourceVersion: "7"},
		{name: "a fresh DELETE refused: failed, and recorded", d: decision(), deleteErr: apierrors.NewForbidden(namespacesResource, "team-a", errors.New("denied")),
			state: report.StateFailed, message: "delete namespace team-a: ", writes: 1, deletes: 1, resourceVersion: "7", acted: true, recorded: true,
			result: report.ResultFailed},
		{name: "a claimed DELETE of the record's namespace: the record goes with it", d: decision(completing),
			state: report.StatePlanned, message: "completing the expired claim", effects: []string{"delete namespace team-a"}, claims: 1, deletes: 1, acted: true, recorded: true},
		{name: "a claimed DELETE of another namespace", d: decision(completing, notHome),
			state: report.StatePlanned, message: "completing the expired claim", effects: []string{"delete namespace team-a"}, claims: 1, writes: 1, deletes: 1, acted: true, recorded: true,
			result: report.ResultSucceeded},
		{name: "a claim that meets a change: busy", d: decision(completing), claimErr: fmt.Errorf("manager %w", write.ErrChanged),
			state: report.StateBusy, message: "changed since this sweep listed it; left to the next sweep", claims: 1},
		{name: "a claim that fails: failed, and recorded", d: decision(completing), claimErr: errors.New("etcd is down"),
			state: report.StateFailed, message: "claim: etcd is down", claims: 1, writes: 1, recorded: true},
		{name: "a claim that fails, and its record too", d: decision(completing), claimErr: errors.New("etcd is down"), writeErr: errors.New("still down"),
			state: report.StateFailed, message: "record the outcome: still down", claims: 1, writes: 1},
		{name: "SCALE_DOWN of a recreated namespace: left alone", d: decision(completing, scaleDownAll, recreated),
			state: report.StatePlanned, effects: []string{"scale down in namespace team-a: the namespace the claim was made for is gone; the new one of that name is left alone"},
			claims: 1, writes: 1, acted: true, recorded: true, result: report.ResultSucceeded},
		{name: "a WEBHOOK that fails: failures counted, backing off", d: decision(hook, rule), prior: failedTwice, deliverErr: errors.New("HTTP 500 after 3 attempts"),
			state: report.StateFailed, message: "failed: no connection", claims: 1, writes: 1, acted: true, recorded: true,
			result: report.ResultFailed, failures: 3, next: 4 * time.Minute},
		{name: "a WEBHOOK deferred: backing off as before", d: decision(hook, rule), prior: failedTwice, deliverErr: fmt.Errorf("receiver silent: %w", webhook.ErrDeferred),
			state: report.StateDeferred, message: "receiver silent", claims: 1, writes: 1, acted: true, recorded: true,
			result: report.ResultFailed, failures: 2, next: 2 * time.Minute, deferred: true},
		{name: "a WEBHOOK delivered", d: decision(hook, rule), prior: failedTwice,
			state: report.StatePlanned, message: "expired", effects: []string{"POST http://hooks.example.com (Idempotency-Key "}, claims: 1, writes: 1, acted: true, recorded: true,
			result: report.ResultSucceeded},
		{name: "an action done, its record failing", d: decision(notHome), writeErr: errors.New("etcd is down"),
			state: report.StateFailed, message: "action done, but recording it failed: etcd is down", effects: []string{"delete namespace team-a"}, writes: 1, deletes: 1, resourceVersion: "7", acted: true,
			result: report.ResultSucceeded},
		{name: "an action failed, its record failing", d: decision(hook, rule), deliverErr: errors.New("HTTP 500"), writeErr: errors.New("etcd is down"),
			state: report.StateFailed, message: "failed: no connection; recording it failed: etcd is down", claims: 1, writes: 1, acted: true,
			result: report.ResultFailed, failures: 1, next: time.Minute},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newFakeWriter()
			if tt.deleteErr != nil {
				w.deleteErrs = []error{tt.deleteErr}
			}
			w.deliverErr = tt.deliverErr
			x := newExecutor(t, w, emptyReader(t))
			rec := &fakeRecord{prior: tt.prior, claimErr: tt.claimErr, writeErr: tt.writeErr}
			e, acted, recorded := x.act(t.Context(), rec, tt.d)
			if e.State != tt.state || !strings.Contains(e.Message, tt.message) {
				t.Errorf("entry %s %q, want %s %q", e.State, e.Message, tt.state, tt.message)
			}
			if len(e.Effects) != len(tt.effects) || len(e.Effects) > 0 && !strings.HasPrefix(e.Effects[0], tt.effects[0]) {
				t.Errorf("effects %q, want %q", e.Effects, tt.effects)
			}
			if acted != tt.acted || recorded != tt.recorded {
				t.Errorf("acted %t, recorded %t; want %t, %t", acted, recorded, tt.acted, tt.recorded)
			}
			if len(rec.claims) != tt.claims || len(rec.writes) != tt.writes || len(w.deletes) != tt.deletes {
				t.Fatalf("%d claims, %d writes, %d DELETEs; want %d, %d, %d", len(rec.claims), len(rec.writes), len(w.deletes), tt.claims, tt.writes, tt.deletes)
			}
			if tt.deletes > 0 && (w.deletes[0].uid != "ns-uid" || w.deletes[0].resourceVersion != tt.resourceVersion) {
				t.Errorf("DELETE %+v, want of ns-uid at version %q", w.deletes[0], tt.resourceVersion)
			}
			if tt.claims > 0 {
				c := rec.claims[0]
				if c.Sweep != "sweep-1" || c.Policy != "expire" || c.TargetUID != "ns-uid" || c.Generation != 3 || !c.Expires.Equal(sweepNow.Add(time.Minute)) {
					t.Errorf("claim %+v; want sweep-1's of expire, on ns-uid, generation 3, expiring after --claim-ttl", c)
				}
			}
			if tt.result == "" {
				return
			}
			var last *status.LastAction
			for _, o := range rec.writes {
				last = o.Last
			}
			if last == nil {
				t.Fatalf("writes %+v, want a last action", rec.writes)
			}
			var next time.Duration
			if last.NextAttempt != nil {
				next = last.NextAttempt.Sub(sweepNow)
			}
			if last.Result != tt.result || last.Failures != tt.failures || next != tt.next || last.Deferred != tt.deferred {
				t.Errorf("last action %+v; want %s, %d failures, next in %s, deferred %t", last, tt.result, tt.failures, tt.next, tt.deferred)
			}
		})
	}
}

// A WEBHOOK's delivery goes as its manager's scope says: a tenant's to a
// public URL is a tenant's route, a rule's or a trusted manager's the
// platform's; what a tenant reads of a failure (a rule's is on the tenant's
// namespace) is its summary, not the receiver's words. A refusal, or a
// policy no body can be made of, sends nothing; an effect shows the URL's
// origin alone, as its path or query may be a credential.
func TestPostRoutes(t *testing.T) {
	for _, tt := range []struct {
		name       string
		d          decide.Decision
		deliverErr error
		// route is the route delivered on; message what the error says
		// (with no route: nothing delivered), effect the first of the
		// effects of a delivery.
		route   *webhook.Route
		message string
		effect  string
	}{
		{name: "a rule's", d: decision(webhookTo("http://hooks.example.com/x"), rule), deliverErr: errors.New("dial tcp: refused"),
			route: &webhook.Route{}, message: "failed: no connection"},
		{name: "a tenant's", d: decision(webhookTo("http://hooks.example.com/x")), deliverErr: errors.New("dial tcp: refused"),
			route: &webhook.Route{Tenant: true, Scope: "team-a"}, message: "failed: no connection"},
		{name: "a trusted manager's", d: decision(webhookTo("http://hooks.example.com/x"), func(d *decide.Decision) { d.Manager.Namespace = "platform" }), deliverErr: errors.New("dial tcp: refused"),
			route: &webhook.Route{}, message: "dial tcp: refused"},
		{name: "a tenant's refused", d: decision(webhookTo("http://sink.team-b.svc/x")), message: "refused: Service sink is of namespace team-b"},
		{name: "a policy that is no JSON", d: decision(webhookTo("http://hooks.example.com/x"), rule, func(d *decide.Decision) { d.Plan.Policy.Raw = map[string]any{"x": func() {}} }),
			message: "webhook body: json: unsupported type: func()"},
		{name: "a delivery shown by its origin", d: decision(webhookTo("http://hooks.example.com/secret?token=x"), rule),
			route: &webhook.Route{}, effect: "POST http://hooks.example.com (Idempotency-Key "},
		{name: "a delivery to a URL that does not parse, not shown", d: decision(webhookTo("http://[::1/x"), rule),
			route: &webhook.Route{}, effect: "POST (a URL that does not parse) (Idempotency-Key "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newFakeWriter()
			w.deliverErr = tt.deliverErr
			x := newExecutor(t, w, emptyReader(t))
			x.Trusted = []string{"platform"}
			effects, err := x.post(t.Context(), tt.d.Manager, tt.d.Plan, tt.d.Plan.Target)
			if tt.route == nil && len(w.delivered) != 0 ||
				tt.route != nil && (len(w.delivered) != 1 || w.delivered[0].Tenant != tt.route.Tenant || w.delivered[0].Scope != tt.route.Scope) {
				t.Fatalf("delivered %+v, want as %+v", w.delivered, tt.route)
			}
			if got := fmt.Sprint(err); tt.message == "" && err != nil || !strings.HasPrefix(got, tt.message) || tt.deliverErr != nil && !errors.Is(err, tt.deliverErr) {
				t.Errorf("error %v, want %q, wrapping %v", err, tt.message, tt.deliverErr)
			}
			if tt.effect == "" && effects != nil || tt.effect != "" && (len(effects) != 1 || !strings.HasPrefix(effects[0], tt.effect)) {
				t.Errorf("effects %q, want %q", effects, tt.effect)
			}
		})
	}
}

// A namespace read again during a DELETE as listed: the decision stands
// if unchanged (the DELETE is sent again at the version read), else busy;
// a touch changes only the decision of an IDLE policy.
func TestActDeleteAsListed(t *testing.T) {
	conflict := apierrors.NewConflict(namespacesResource, "team-a", nil)
	held := namespaceMeta("team-a", "ns-uid")
	held.Annotations = map[string]string{status.HoldAnnotation: "2026-12-01T00:00:00Z"}
	touched := namespaceMeta("team-a", "ns-uid")
	touched.Annotations = map[string]string{policy.TouchedAnnotation: "2026-11-28T07:59:00Z"}
	idle := func(d *decide.Decision) {
		d.Manager.Policies = []policy.Policy{{Name: "expire", Condition: policy.Condition{Type: policy.ConditionIdle}}}
	}
	for _, tt := range []struct {
		name     string
		idle     bool
		now      []*metav1.PartialObjectMetadata
		state    report.State
		versions []string
	}{
		{"gone", false, nil, report.StateBusy, []string{"7"}},
		{"recreated", false, []*metav1.PartialObjectMetadata{namespaceMeta("team-a", "other-uid")}, report.StateBusy, []string{"7"}},
		{"held since", false, []*metav1.PartialObjectMetadata{held}, report.StateBusy, []string{"7"}},
		{"changed, not for the decision", false, []*metav1.PartialObjectMetadata{namespaceMeta("team-a", "ns-uid")}, report.StatePlanned, []string{"7", "8"}},
		{"touched since, no IDLE policy", false, []*metav1.PartialObjectMetadata{touched}, report.StatePlanned, []string{"7", "8"}},
		{"touched since, by an IDLE policy", true, []*metav1.PartialObjectMetadata{touched}, report.StateBusy, []string{"7"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newFakeWriter()
			w.deleteErrs = []error{conflict, nil}
			x := newExecutor(t, w, readerOf(t, tt.now))
			d := decision()
			if tt.idle {
				idle(&d)
			}
			e, _, _ := x.act(t.Context(), &fakeRecord{}, d)
			var versions []string
			for _, d := range w.deletes {
				versions = append(versions, d.resourceVersion)
			}
			if e.State != tt.state || !slices.Equal(versions, tt.versions) {
				t.Errorf("%s after DELETEs at %q; want %s after %q", e.State, versions, tt.state, tt.versions)
			}
		})
	}
}

// deleteClaimed, completing a claim, deletes by UID alone, and takes a
// namespace going or gone, or recreated, as done.
func TestDeleteClaimed(t *testing.T) {
	conflict := apierrors.NewConflict(namespacesResource, "team-a", errors.New("uid precondition"))
	for _, tt := range []struct {
		name      string
		going     bool
		deleteErr error
		now       []*metav1.PartialObjectMetadata
		effects   []string
		err       string
		deletes   int
	}{
		{name: "deleted", effects: []string{"delete namespace team-a"}, deletes: 1},
		{name: "going already", going: true, effects: []string{"delete namespace team-a (already being deleted)"}},
		{name: "gone", deleteErr: apierrors.NewNotFound(namespacesResource, "team-a"), effects: []string{"delete namespace team-a (already gone)"}, deletes: 1},
		{name: "a conflict, the namespace gone", deleteErr: conflict,
			effects: []string{"delete namespace team-a (already gone; a new namespace of that name is left alone)"}, deletes: 1},
		{name: "a conflict, the namespace recreated", deleteErr: conflict, now: []*metav1.PartialObjectMetadata{namespaceMeta("team-a", "other-uid")},
			effects: []string{"delete namespace team-a (already gone; a new namespace of that name is left alone)"}, deletes: 1},
		{name: "a conflict of the namespace itself (a webhook's)", deleteErr: conflict, now: []*metav1.PartialObjectMetadata{namespaceMeta("team-a", "ns-uid")},
			err: "delete namespace team-a: Operation cannot be fulfilled", deletes: 1},
		{name: "refused", deleteErr: apierrors.NewForbidden(namespacesResource, "team-a", errors.New("denied")),
			err: "delete namespace team-a: namespaces \"team-a\" is forbidden", deletes: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newFakeWriter()
			if tt.deleteErr != nil {
				w.deleteErrs = []error{tt.deleteErr}
			}
			x := newExecutor(t, w, readerOf(t, tt.now))
			effects, err := x.deleteClaimed(t.Context(), decide.Target{Name: "team-a", UID: "ns-uid", Going: tt.going})
			if got := fmt.Sprint(err); tt.err == "" && err != nil || tt.err != "" && !strings.HasPrefix(got, tt.err) {
				t.Errorf("error %v, want %q", err, tt.err)
			}
			if !slices.Equal(effects, tt.effects) {
				t.Errorf("effects %q, want %q", effects, tt.effects)
			}
			if len(w.deletes) != tt.deletes || tt.deletes > 0 && (w.deletes[0].uid != "ns-uid" || w.deletes[0].resourceVersion != "") {
				t.Errorf("DELETEs %+v; want %d, by UID alone", w.deletes, tt.deletes)
			}
		})
	}
}

// apiAnswering is a typed client of a server answering every request with
// code and body.
func apiAnswering(t *testing.T, code int, body string) kubernetes.Interface {
	t.Helper()
	return apiServing(t, func(string) (int, string) { return code, body })
}

// apiServing is a typed client of a server answering a request for path
// with what answer says.
func apiServing(t *testing.T, answer func(path string) (int, string)) kubernetes.Interface {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, body := answer(r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// What a DELETE frees is read before it (with --reclaim); when that read
// fails, the DELETE goes ahead and the report counts it unknown.
func TestActReclaim(t *testing.T) {
	for _, tt := range []struct {
		name      string
		code      int
		body      string
		unknown   int64
		reclaimed bool
	}{
		{"read", http.StatusOK, `{"kind":"List","apiVersion":"v1","metadata":{},"items":[]}`, 0, true},
		{"not read", http.StatusForbidden, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`, 1, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newFakeWriter()
			reads := emptyReader(t)
			reads.Clients.Kube = apiAnswering(t, tt.code, tt.body)
			x := newExecutor(t, w, reads)
			x.SkipReclaim = false
			x.Reclaim = reclaim.NewReclaim(probe.Reads{Reader: reads, ClaimTTL: x.ClaimTTL})
			e, acted, _ := x.act(t.Context(), &fakeRecord{}, decision())
			if !acted || len(w.deletes) != 1 {
				t.Fatalf("acted %t, %d DELETEs; want the DELETE sent", acted, len(w.deletes))
			}
			if got := x.Counts.ReclaimUnknown.Load(); got != tt.unknown || (e.Reclaimed != nil) != tt.reclaimed {
				t.Errorf("%d unknown, reclaimed %v; want %d, reclaimed %t", got, e.Reclaimed, tt.unknown, tt.reclaimed)
			}
			if unknownEffect := slices.ContainsFunc(e.Effects, func(s string) bool { return strings.HasPrefix(s, "what it freed is not known: ") }); unknownEffect != (tt.unknown > 0) {
				t.Errorf("effects %q; want it to say what was freed is unknown: %t", e.Effects, tt.unknown > 0)
			}
		})
	}
}

// A final policy's action done ends its subject; a stage is recorded as
// fired, the subject left standing.
func TestOutcomeOfStage(t *testing.T) {
	for _, tt := range []struct {
		name  string
		final bool
		stage string
	}{
		{"final", true, ""},
		{"a stage", false, "expire"},
	} {
		d := decision(func(d *decide.Decision) { d.Plan.Policy.Final = tt.final })
		x := newExecutor(t, newFakeWriter(), emptyReader(t))
		e, o := x.outcomeOf(d.Entry, d.Plan, nil, sweepNow, sweepNow, nil)
		if e.State != report.StatePlanned || o.Done != tt.final || o.Stage != tt.stage || o.Last == nil || o.Last.Result != report.ResultSucceeded {
			t.Errorf("%s: %s, %+v; want planned, done %t, stage %q, succeeded", tt.name, e.State, o, tt.final, tt.stage)
		}
	}
}

// An interrupt while what a DELETE frees is read keeps the DELETE from
// starting.
func TestActInterrupted(t *testing.T) {
	w := newFakeWriter()
	x := newExecutor(t, w, emptyReader(t))
	stopped(x)
	e, acted, recorded := x.act(t.Context(), &fakeRecord{}, decision())
	if e.State != report.StateDeferred || acted || !recorded || len(w.deletes) != 0 {
		t.Errorf("%s %q, acted %t, recorded %t, %d DELETEs; want deferred, nothing done", e.State, e.Message, acted, recorded, len(w.deletes))
	}
}

// An action of a type nsman does not know fails, and does nothing.
func TestApplyUnknownAction(t *testing.T) {
	w := newFakeWriter()
	x := newExecutor(t, w, emptyReader(t))
	d := decision(func(d *decide.Decision) { d.Plan.Policy.Action.Type = "EXPLODE" })
	if _, err := x.apply(t.Context(), d.Manager, &fakeRecord{}, d.Plan, nil); err == nil || err.Error() != `unknown action "EXPLODE"` || len(w.deletes) != 0 {
		t.Errorf("error %v, %d DELETEs; want the action unknown, nothing done", err, len(w.deletes))
	}
}

// A SCALE_DOWN scales the namespace's workloads through the writer and
// sums what they free, with --reclaim.
func TestApplyScaleDown(t *testing.T) {
	w := newFakeWriter()
	reads := emptyReader(t)
	reads.Clients.Kube = apiServing(t, func(path string) (int, string) {
		if path == "/apis/apps/v1/namespaces/ns/deployments" {
			return http.StatusOK, `{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{},"items":[` +
				`{"metadata":{"name":"web","namespace":"ns","resourceVersion":"1"},"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"web","resources":{"requests":{"cpu":"250m"}}}]}}}}]}`
		}
		return http.StatusOK, `{"kind":"List","apiVersion":"v1","metadata":{},"items":[]}`
	})
	x := newExecutor(t, w, reads)
	x.SkipReclaim = false
	d := decision(scaleDownAll, func(d *decide.Decision) { d.Plan.Target.Name = "ns" })
	did, err := x.apply(t.Context(), d.Manager, &fakeRecord{}, d.Plan, nil)
	if err != nil || !slices.Equal(did.effects, []string{"scale Deployment/web from 3 to 0"}) || did.reclaimed == nil || did.reclaimed.CPU.String() != "750m" || w.patches != 1 {
		t.Errorf("effects %q, reclaimed %v, %d patches, error %v; want web scaled from 3, once, what it frees summed", did.effects, did.reclaimed, w.patches, err)
	}
}

// A SCALE_DOWN whose selectors name other kinds puts each to sleep its own
// way, leaves alone what is labelled keep-awake and a ReplicaSet its
// Deployment controls, and sums what scaled replicas free (a CronJob
// suspended frees nothing counted).
func TestApplyScaleDownKinds(t *testing.T) {
	bodies := clustertest.DiscoveryBodies()
	bodies["/apis/apps/v1/namespaces/ns/deployments"] = `{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{},"items":[` +
		`{"metadata":{"name":"web","namespace":"ns","resourceVersion":"1","labels":{"` + status.KeepAwakeLabel + `":"true"}},"spec":{"replicas":3}}]}`
	bodies["/apis/apps/v1/namespaces/ns/replicasets"] = `{"kind":"ReplicaSetList","apiVersion":"apps/v1","metadata":{},"items":[` +
		`{"metadata":{"name":"web-1","namespace":"ns","resourceVersion":"1","ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"web","uid":"u","controller":true}]},"spec":{"replicas":3}},` +
		`{"metadata":{"name":"solo","namespace":"ns","resourceVersion":"1"},"spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"100m"}}}]}}}}]}`
	bodies["/apis/batch/v1/namespaces/ns/cronjobs"] = `{"kind":"CronJobList","apiVersion":"batch/v1","metadata":{},"items":[` +
		`{"metadata":{"name":"report","namespace":"ns","resourceVersion":"1"},"spec":{"schedule":"@daily","jobTemplate":{"spec":{"template":{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"4"}}}]}}}}}}]}`
	w := newFakeWriter()
	reads := emptyReader(t)
	reads.Clients.Kube = clustertest.APIServer(t, bodies)
	x := newExecutor(t, w, reads)
	x.SkipReclaim = false
	d := decision(scaleDownAll, func(d *decide.Decision) {
		d.Plan.Target.Name = "ns"
		d.Plan.Policy.Action.Selectors = []policy.Selector{{Kind: policy.KindCronJob}, {Kind: "replicaset"}, {Kind: policy.KindDeployment}}
	})
	did, err := x.apply(t.Context(), d.Manager, &fakeRecord{}, d.Plan, nil)
	want := []string{"suspend CronJob/report", "scale ReplicaSet/solo from 2 to 0", "leave Deployment/web awake: labelled " + status.KeepAwakeLabel}
	if err != nil || !slices.Equal(did.effects, want) || did.reclaimed == nil || did.reclaimed.CPU.String() != "200m" || w.patches != 2 {
		t.Errorf("effects %q, reclaimed %v, %d patches, error %v; want %q, 200m CPU, 2 patches", did.effects, did.reclaimed, w.patches, err, want)
	}
}

// A SCALE_DOWN naming a kind the cluster does not serve fails before it
// writes anything, whatever the other selectors select.
func TestApplyScaleDownUnknownKind(t *testing.T) {
	bodies := clustertest.DiscoveryBodies()
	bodies["/apis/apps/v1/namespaces/ns/deployments"] = `{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{},"items":[` +
		`{"metadata":{"name":"web","namespace":"ns","resourceVersion":"1"},"spec":{"replicas":3}}]}`
	w := newFakeWriter()
	reads := emptyReader(t)
	reads.Clients.Kube = clustertest.APIServer(t, bodies)
	x := newExecutor(t, w, reads)
	d := decision(scaleDownAll, func(d *decide.Decision) {
		d.Plan.Target.Name = "ns"
		d.Plan.Policy.Action.Selectors = []policy.Selector{{Kind: policy.KindDeployment}, {Kind: "Rollout.example.com"}}
	})
	_, err := x.apply(t.Context(), d.Manager, &fakeRecord{}, d.Plan, nil)
	if want := "scale down in namespace ns: selectors[1]: kind Rollout.example.com: the cluster serves no kind of that name with a scale subresource"; err == nil || err.Error() != want || w.patches != 0 {
		t.Errorf("error %v, %d patches; want %q and none", err, w.patches, want)
	}
}

// A wake or a re-sleep is only ever done by a SLEEP policy: one that names
// another action does nothing, however it came to be planned.
func TestApplyWakeOnlyBySleep(t *testing.T) {
	for _, mod := range []func(*decide.Decision){
		func(d *decide.Decision) { d.Plan.Wake = true },
		func(d *decide.Decision) { d.Plan.Resleep = true },
	} {
		w := newFakeWriter()
		x := newExecutor(t, w, emptyReader(t))
		d := decision(mod) // a DELETE of team-a
		if _, err := x.apply(t.Context(), d.Manager, &fakeRecord{}, d.Plan, nil); err == nil || len(w.deletes) != 0 {
			t.Errorf("error %v, %d DELETEs; want refused, none", err, len(w.deletes))
		}
	}
}

// A WEBHOOK that failed or was deferred backs off from when its delivery
// ended, or it was deferred, not from the sweep's start: a sweep that
// spent longer than the backoff on receivers leaves nothing due at once
// for the next.
func TestWebhookBacksOffFromTheEndOfItsAttempt(t *testing.T) {
	const took = 90 * time.Second
	hook := webhookTo("http://hooks.example.com/x")
	for _, tt := range []struct {
		name       string
		deliverErr error
		silent     error
		next       time.Duration
		deferred   bool
	}{
		{name: "timed out", deliverErr: errors.New("no response within 10s"), next: took + 4*time.Minute},
		{name: "deferred in its delivery", deliverErr: fmt.Errorf("receiver silent: %w", webhook.ErrDeferred), next: took + 2*time.Minute, deferred: true},
		{name: "deferred before its claim", silent: webhook.ErrDeferred, next: took + 2*time.Minute, deferred: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newFakeWriter()
			w.deliverErr, w.silent = tt.deliverErr, tt.silent
			x := newExecutor(t, w, emptyReader(t))
			now := sweepNow
			x.Clock = func() time.Time { return now }
			w.onDeliver = func() { now = now.Add(took) }
			if tt.silent != nil {
				now = now.Add(took) // deferred once the sweep was this far
			}
			rec := &fakeRecord{prior: failedTwice}
			e := x.CarryOut(t.Context(), rec, decision(hook, rule))
			if len(rec.writes) == 0 || rec.writes[len(rec.writes)-1].Last == nil {
				t.Fatalf("writes %+v, want the outcome recorded", rec.writes)
			}
			last := rec.writes[len(rec.writes)-1].Last
			want := sweepNow.Add(tt.next)
			if last.NextAttempt == nil || !last.NextAttempt.Equal(want) || last.Deferred != tt.deferred || e.Due == nil || !e.Due.Equal(want) {
				t.Errorf("last action %+v, due %v; want the next attempt at %s, deferred %t", last, e.Due, want, tt.deferred)
			}
		})
	}
}
