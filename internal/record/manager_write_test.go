package record

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/cluster/clustertest"
	"github.com/nsman/nsman/internal/listpage/listpagetest"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

var (
	sweepNow  = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	claimTTL  = 10 * time.Minute
	managerGR = schema.GroupResource{Group: "k8s.consol.de", Resource: "namespacemanagers"}
)

// sentPatch is a patch a recordingWriter was asked to send, and to what.
type sentPatch struct {
	target string
	patch  write.Patch
}

// recordingWriter records the patches of managers and namespaces and
// answers them with answers in turn, then nil; every other write is the dry
// run's.
type recordingWriter struct {
	write.Writer
	sent    []sentPatch
	answers []error
}

func newRecordingWriter(answers ...error) *recordingWriter {
	return &recordingWriter{Writer: write.New(nil, nil, nil, nil, true), answers: answers}
}

func (w *recordingWriter) answer() error {
	if len(w.answers) == 0 {
		return nil
	}
	err := w.answers[0]
	w.answers = w.answers[1:]
	return err
}

func (w *recordingWriter) PatchManager(_ context.Context, namespace, name string, p write.Patch) error {
	w.sent = append(w.sent, sentPatch{namespace + "/" + name, p})
	return w.answer()
}

func (w *recordingWriter) PatchNamespace(_ context.Context, name string, p write.Patch) error {
	w.sent = append(w.sent, sentPatch{name, p})
	return w.answer()
}

func conflict() error {
	return apierrors.NewConflict(managerGR, "m", errors.New("the object has been modified"))
}

func invalid() error {
	return apierrors.NewInvalid(schema.GroupKind{Group: managerGR.Group, Kind: "NamespaceManager"}, "m", nil)
}

// managerObj is manager home/m as listed, at resourceVersion rv.
func managerObj(uid string, generation int64, rv string, annotations map[string]any) *unstructured.Unstructured {
	meta := map[string]any{"name": "m", "namespace": "home", "uid": uid, "generation": generation, "resourceVersion": rv}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "k8s.consol.de/v1beta1", "kind": "NamespaceManager", "metadata": meta, "spec": map[string]any{}}}
}

// managerServer answers a re-read of home/m with obj and st, or with
// nothing when obj is nil; reads counts them.
func managerServer(t *testing.T, obj *unstructured.Unstructured, st *status.Status, reads *int) cluster.Reader {
	t.Helper()
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*reads++
		items := []string{}
		if obj != nil {
			o := obj.DeepCopy()
			if st != nil {
				var raw map[string]any
				if err := json.Unmarshal([]byte(write.MustJSON(st)), &raw); err != nil {
					t.Error(err)
				}
				// Both places: the test reads it where its StatusLocation says.
				o.Object["status"] = raw
				o.SetAnnotations(map[string]string{status.StatusAnnotation: write.MustJSON(st)})
			}
			data, err := o.MarshalJSON()
			if err != nil {
				t.Error(err)
			}
			items = append(items, string(data))
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(listpagetest.ListPage("", items...)))
	})
	return cluster.Reader{Clients: cluster.Clients{Managers: clustertest.ManagersClient(t, handler)}}
}

// statusAfter is the Status patch p makes of from, where at keeps it.
func statusAfter(t *testing.T, at StatusLocation, from status.Status, p write.Patch) status.Status {
	t.Helper()
	var body struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Status json.RawMessage `json:"status"`
	}
	if err := json.Unmarshal(p.Body, &body); err != nil {
		t.Fatalf("patch %s: %v", p.Body, err)
	}
	raw := []byte(body.Metadata.Annotations[status.StatusAnnotation])
	if at.Subresource {
		merged, err := jsonpatch.MergePatch([]byte(write.MustJSON(from)), body.Status)
		if err != nil {
			t.Fatal(err)
		}
		raw = merged
	}
	var st status.Status
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("status in %s: %v", p.Body, err)
	}
	return st
}

func resourceVersionOf(t *testing.T, p write.Patch) string {
	t.Helper()
	var body struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(p.Body, &body); err != nil {
		t.Fatalf("patch %s: %v", p.Body, err)
	}
	return body.Metadata.ResourceVersion
}

func jsonOps(t *testing.T, p write.Patch) []write.PatchOp {
	t.Helper()
	if !p.JSON {
		t.Fatalf("patch %s is no JSON patch", p.Body)
	}
	var ops []write.PatchOp
	if err := json.Unmarshal(p.Body, &ops); err != nil {
		t.Fatal(err)
	}
	return ops
}

func waitingEntry() report.Entry {
	return report.Entry{Namespace: "home", Name: "m", Target: "ci-1", State: report.StateWaiting, Message: "waiting for the TTL"}
}

func storedWithChecks() status.Status {
	return status.Status{Progress: status.Progress{ObservedGeneration: 3, Checks: map[string]policy.CheckState{"p": {Generation: 3, Passed: 1, Last: sweepNow.Add(-time.Hour)}}},
		State: report.StateWaiting, Target: "ci-1"}
}

// TestManagerClaim: a claim is a patch of the record at the version listed,
// where the record lives; a manager changed or gone since is
// ChangedSinceListed, anything else the error as it came.
func TestManagerClaim(t *testing.T) {
	claim := status.Claim{Policy: "p", Action: policy.ActionDelete, Sweep: "s2", Expires: sweepNow.Add(claimTTL), Generation: 3, TargetUID: "t1"}
	acting := report.Entry{Namespace: "home", Name: "m", Target: "ci-1", State: report.StatePlanned, Policy: "p"}
	for _, tc := range []struct {
		name        string
		at          StatusLocation
		final       bool
		answer      error
		wantChanged bool
		wantErr     bool
	}{
		{"annotation, a stage", StatusLocation{}, false, nil, false, false},
		{"annotation, final", StatusLocation{}, true, nil, false, false},
		{"subresource, final", StatusLocation{Subresource: true}, true, nil, false, false},
		{"subresource, a stage", StatusLocation{Subresource: true}, false, nil, false, false},
		{"changed since listed", StatusLocation{}, true, conflict(), true, true},
		{"gone since listed", StatusLocation{Subresource: true}, true, apierrors.NewNotFound(managerGR, "m"), true, true},
		{"refused", StatusLocation{}, true, apierrors.NewForbidden(managerGR, "m", errors.New("no")), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newRecordingWriter(tc.answer)
			stored := storedWithChecks()
			mr := &Manager{Env: Env{Writer: w, Clock: func() time.Time { return sweepNow }, ClaimTTL: claimTTL}, At: tc.at,
				Obj: managerObj("u1", 3, "7", nil), Now: sweepNow, Stored: stored}
			err := mr.Claim(t.Context(), claim, acting, tc.final)
			if (err != nil) != tc.wantErr || errors.Is(err, write.ErrChanged) != tc.wantChanged {
				t.Fatalf("Claim: %v; want error %v, ErrChanged %v", err, tc.wantErr, tc.wantChanged)
			}
			if (mr.claimed != nil) == tc.wantErr {
				t.Errorf("Claim: claimed %v after error %v", mr.claimed, err)
			}
			if len(w.sent) != 1 {
				t.Fatalf("Claim sent %d patches, want 1", len(w.sent))
			}
			p := w.sent[0]
			if p.target != "home/m" || p.patch.JSON || (p.patch.Subresource == "status") != tc.at.Subresource {
				t.Errorf("Claim patched %s (subresource %q, JSON %v)", p.target, p.patch.Subresource, p.patch.JSON)
			}
			if rv := resourceVersionOf(t, p.patch); rv != "7" {
				t.Errorf("Claim at resourceVersion %q, want the one listed, 7", rv)
			}
			got := statusAfter(t, tc.at, stored, p.patch)
			if got.Claim == nil || got.Claim.Sweep != "s2" || got.Claim.TargetUID != "t1" || !got.Claim.Expires.Equal(claim.Expires) {
				t.Errorf("Claim wrote claim %+v, want %+v", got.Claim, claim)
			}
			if got.State != report.StatePlanned || (got.Checks == nil) != tc.final {
				t.Errorf("Claim wrote state %s, checks %v; want due, checks dropped only when final (%v)", got.State, got.Checks, tc.final)
			}
		})
	}
}

// TestManagerWriteAfterClaim: the outcome of a claimed action replaces the
// claim with a JSON patch that tests first that the claim is still this
// sweep's; a final action done deactivates the manager, in the same patch
// where the annotation keeps the record, else in a patch of its own.
func TestManagerWriteAfterClaim(t *testing.T) {
	claim := status.Claim{Policy: "p", Action: policy.ActionDelete, Sweep: "s2", Expires: sweepNow.Add(claimTTL), Generation: 3}
	last := &status.LastAction{Policy: "p", Action: policy.ActionDelete, Result: report.ResultSucceeded, Time: sweepNow}
	for _, tc := range []struct {
		name           string
		at             StatusLocation
		done           bool
		answer         error
		wantLost       bool
		wantPatches    int
		wantDeactivate bool // in the record's own patch
	}{
		{"annotation, a stage", StatusLocation{}, false, nil, false, 2, false},
		{"annotation, done", StatusLocation{}, true, nil, false, 2, true},
		{"subresource, a stage", StatusLocation{Subresource: true}, false, nil, false, 2, false},
		{"subresource, done", StatusLocation{Subresource: true}, true, nil, false, 3, false},
		{"claim lost", StatusLocation{}, true, invalid(), true, 2, true},
		{"claim lost, subresource", StatusLocation{Subresource: true}, true, invalid(), true, 2, false},
		{"deactivation refused", StatusLocation{Subresource: true}, true, nil, false, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newRecordingWriter(nil, tc.answer)
			if tc.name == "deactivation refused" {
				w.answers = []error{nil, nil, apierrors.NewForbidden(managerGR, "m", errors.New("no"))}
			}
			mr := &Manager{Env: Env{Writer: w, Clock: func() time.Time { return sweepNow }, ClaimTTL: claimTTL}, At: tc.at,
				Obj: managerObj("u1", 3, "7", nil), Now: sweepNow, Stored: storedWithChecks()}
			acting := report.Entry{Namespace: "home", Name: "m", Target: "ci-1", State: report.StatePlanned, Policy: "p"}
			if err := mr.Claim(t.Context(), claim, acting, true); err != nil {
				t.Fatal(err)
			}
			claimed := *mr.claimed
			fired := acting
			fired.State = report.StateFired
			err := mr.Write(t.Context(), Outcome{Entry: fired, Last: last, Done: tc.done})
			switch {
			case tc.wantLost && (!write.LostClaim(err) || err == nil):
				t.Errorf("Write: %v, want the claim lost", err)
			case tc.name == "deactivation refused" && !apierrors.IsForbidden(err):
				t.Errorf("Write: %v, want the deactivation's error", err)
			case !tc.wantLost && tc.name != "deactivation refused" && err != nil:
				t.Errorf("Write: %v", err)
			}
			if len(w.sent) != tc.wantPatches {
				t.Fatalf("Write sent %d patches in all, want %d", len(w.sent), tc.wantPatches)
			}
			ops := jsonOps(t, w.sent[1].patch)
			if tc.at.Subresource {
				if w.sent[1].patch.Subresource != "status" || len(ops) != 2 || ops[0] != (write.PatchOp{Op: "test", Path: "/status/claim/sweep", Value: "s2"}) || ops[1].Op != "replace" || ops[1].Path != "/status" {
					t.Fatalf("Write sent %s, want a test of the claim's sweep and a replace of /status", w.sent[1].patch.Body)
				}
			} else {
				path := write.AnnotationPointer(status.StatusAnnotation)
				if w.sent[1].patch.Subresource != "" || len(ops) < 2 || ops[0] != (write.PatchOp{Op: "test", Path: path, Value: write.MustJSON(claimed)}) || ops[1].Op != "replace" || ops[1].Path != path {
					t.Fatalf("Write sent %s, want a test of the claimed annotation and its replace", w.sent[1].patch.Body)
				}
				deactivates := len(ops) == 3 && ops[2] == (write.PatchOp{Op: "add", Path: "/spec/deactivated", Value: true})
				if deactivates != tc.wantDeactivate || (len(ops) == 3) != tc.wantDeactivate {
					t.Errorf("Write sent %s, want deactivation %v", w.sent[1].patch.Body, tc.wantDeactivate)
				}
			}
			var to status.Status
			raw, _ := json.Marshal(ops[1].Value)
			if tc.at.Subresource {
				if err := json.Unmarshal(raw, &to); err != nil {
					t.Fatal(err)
				}
			} else if err := json.Unmarshal([]byte(ops[1].Value.(string)), &to); err != nil {
				t.Fatal(err)
			}
			if to.Claim != nil || to.LastAction == nil || to.LastAction.Result != report.ResultSucceeded || to.State != report.StateFired {
				t.Errorf("Write replaced the claim with %+v, want no claim, the last action and state fired", to)
			}
			if tc.wantPatches == 3 && (string(w.sent[2].patch.Body) != `{"spec":{"deactivated":true}}` || w.sent[2].patch.Subresource != "") {
				t.Errorf("Write deactivated with %s (subresource %q)", w.sent[2].patch.Body, w.sent[2].patch.Subresource)
			}
		})
	}
}

// TestManagerWriteWithoutClaim: a record no claim of this sweep's preceded
// is written at the version listed. On a conflict an entry without an
// action is left to the next sweep; an action's outcome is read again and
// written over the change unless the manager is gone, another (its uid or
// spec changed) or claimed by a live sweep.
func TestManagerWriteWithoutClaim(t *testing.T) {
	last := &status.LastAction{Policy: "p", Action: policy.ActionScaleDown, Result: report.ResultFailed, Message: "boom", Time: sweepNow}
	otherClaim := func(expires time.Time, generation int64) *status.Status {
		st := storedWithChecks()
		st.Claim = &status.Claim{Policy: "p", Action: policy.ActionDelete, Sweep: "s9", Expires: expires, Generation: generation}
		return &st
	}
	for _, tc := range []struct {
		name    string
		at      StatusLocation
		stored  func(*Manager) status.Status // nil: storedWithChecks
		o       Outcome
		answers []error
		// now is the manager read again, with its status; nil: none found.
		now         *unstructured.Unstructured
		nowStatus   *status.Status
		wantChanged bool
		wantErr     bool
		wantRVs     []string // of the patches of the record sent, in turn
		wantReads   int
		wantDeact   bool // a patch of its own setting spec.deactivated follows
	}{
		{name: "nothing changed", o: Outcome{Entry: waitingEntry()},
			stored: func(mr *Manager) status.Status {
				var st status.Status
				mr.keep(&st, Outcome{Entry: waitingEntry()})
				return st
			}},
		{name: "waiting, at the version listed", o: Outcome{Entry: waitingEntry()}, wantRVs: []string{"7"}},
		{name: "waiting, subresource", at: StatusLocation{Subresource: true}, o: Outcome{Entry: waitingEntry()}, wantRVs: []string{"7"}},
		{name: "waiting, changed since: left to the next sweep", o: Outcome{Entry: waitingEntry()}, answers: []error{conflict()},
			wantChanged: true, wantErr: true, wantRVs: []string{"7"}},
		{name: "an outcome, written over a change", o: Outcome{Entry: waitingEntry(), Last: last}, answers: []error{conflict()},
			now: managerObj("u1", 3, "8", nil), nowStatus: otherClaim(sweepNow.Add(-time.Minute), 3), wantRVs: []string{"7", "8"}, wantReads: 1},
		{name: "an outcome, the spec changed", o: Outcome{Entry: waitingEntry(), Last: last}, answers: []error{conflict()},
			now: managerObj("u1", 4, "8", nil), wantChanged: true, wantErr: true, wantRVs: []string{"7"}, wantReads: 1},
		{name: "an outcome, the manager recreated", o: Outcome{Entry: waitingEntry(), Last: last}, answers: []error{conflict()},
			now: managerObj("u2", 3, "8", nil), wantChanged: true, wantErr: true, wantRVs: []string{"7"}, wantReads: 1},
		{name: "an outcome, the manager gone", o: Outcome{Entry: waitingEntry(), Last: last}, answers: []error{conflict()},
			wantChanged: true, wantErr: true, wantRVs: []string{"7"}, wantReads: 1},
		{name: "an outcome, another sweep's live claim", o: Outcome{Entry: waitingEntry(), Last: last}, answers: []error{conflict()},
			now: managerObj("u1", 3, "8", nil), nowStatus: otherClaim(sweepNow.Add(time.Minute), 3), wantChanged: true, wantErr: true, wantRVs: []string{"7"}, wantReads: 1},
		{name: "an outcome, conflicts every time", o: Outcome{Entry: waitingEntry(), Last: last},
			answers: []error{conflict(), conflict(), conflict(), conflict(), conflict(), conflict()},
			now:     managerObj("u1", 3, "8", nil), wantChanged: true, wantErr: true, wantRVs: []string{"7", "8", "8", "8", "8"}, wantReads: 4},
		{name: "refused", o: Outcome{Entry: waitingEntry()}, answers: []error{apierrors.NewForbidden(managerGR, "m", errors.New("no"))},
			wantErr: true, wantRVs: []string{"7"}},
		{name: "done, annotation: deactivated in the record's patch", o: Outcome{Entry: waitingEntry(), Last: last, Done: true}, wantRVs: []string{"7"}},
		{name: "done, subresource: deactivated after", at: StatusLocation{Subresource: true}, o: Outcome{Entry: waitingEntry(), Last: last, Done: true},
			wantRVs: []string{"7"}, wantDeact: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newRecordingWriter(tc.answers...)
			reads := 0
			mr := &Manager{Env: Env{Writer: w, Reads: managerServer(t, tc.now, tc.nowStatus, &reads), Clock: func() time.Time { return sweepNow }, ClaimTTL: claimTTL},
				At: tc.at, Obj: managerObj("u1", 3, "7", nil), Now: sweepNow, Stored: storedWithChecks()}
			if tc.stored != nil {
				mr.Stored = tc.stored(mr)
			}
			err := mr.Write(t.Context(), tc.o)
			if (err != nil) != tc.wantErr || errors.Is(err, write.ErrChanged) != tc.wantChanged {
				t.Errorf("Write: %v; want error %v, ErrChanged %v", err, tc.wantErr, tc.wantChanged)
			}
			if reads != tc.wantReads {
				t.Errorf("Write read the manager %d times, want %d", reads, tc.wantReads)
			}
			records := w.sent
			if tc.wantDeact {
				if len(records) == 0 || string(records[len(records)-1].patch.Body) != `{"spec":{"deactivated":true}}` {
					t.Fatalf("Write sent %v, want a deactivation last", records)
				}
				records = records[:len(records)-1]
			}
			if len(records) != len(tc.wantRVs) {
				t.Fatalf("Write sent %d patches of the record, want %d", len(records), len(tc.wantRVs))
			}
			for i, p := range records {
				if rv := resourceVersionOf(t, p.patch); rv != tc.wantRVs[i] {
					t.Errorf("patch %d at resourceVersion %q, want %q", i, rv, tc.wantRVs[i])
				}
				var body struct {
					Spec struct {
						Deactivated bool `json:"deactivated"`
					} `json:"spec"`
				}
				if err := json.Unmarshal(p.patch.Body, &body); err != nil {
					t.Fatal(err)
				}
				if want := tc.o.Done && !tc.at.Subresource; body.Spec.Deactivated != want {
					t.Errorf("patch %d %s: deactivates %v, want %v", i, p.patch.Body, body.Spec.Deactivated, want)
				}
				from := storedWithChecks()
				if i > 0 && tc.nowStatus != nil {
					from = *tc.nowStatus
				}
				got := statusAfter(t, tc.at, from, p.patch)
				if got.State != report.StateWaiting || (tc.o.Last != nil) != (got.LastAction != nil) {
					t.Errorf("patch %d wrote %+v, want the outcome kept", i, got)
				}
				// The expired claim read again is of this spec: it stays.
				if wantClaim := i > 0 && tc.nowStatus != nil; (got.Claim != nil) != wantClaim {
					t.Errorf("patch %d left claim %+v, want one %v", i, got.Claim, wantClaim)
				}
			}
		})
	}
}

// TestManagerWriteKeepsAClaimForALaterSweep: an expired claim of this spec
// stays for a later sweep to complete, unless the manager is done; one of
// an older spec is void.
func TestManagerWriteKeepsAClaimForALaterSweep(t *testing.T) {
	for _, tc := range []struct {
		name       string
		generation int64
		done       bool
		want       bool
	}{
		{"this spec", 3, false, true},
		{"this spec, done", 3, true, false},
		{"an older spec", 2, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newRecordingWriter()
			stored := storedWithChecks()
			stored.Claim = &status.Claim{Policy: "p", Action: policy.ActionDelete, Sweep: "s1", Expires: sweepNow.Add(-time.Minute), Generation: tc.generation}
			mr := &Manager{Env: Env{Writer: w, Clock: func() time.Time { return sweepNow }, ClaimTTL: claimTTL},
				Obj: managerObj("u1", 3, "7", nil), Now: sweepNow, Stored: stored}
			if err := mr.Write(t.Context(), Outcome{Entry: waitingEntry(), Done: tc.done}); err != nil {
				t.Fatal(err)
			}
			if len(w.sent) != 1 {
				t.Fatalf("Write sent %d patches, want 1", len(w.sent))
			}
			if got := statusAfter(t, mr.At, stored, w.sent[0].patch); (got.Claim != nil) != tc.want {
				t.Errorf("Write left claim %+v, want one %v", got.Claim, tc.want)
			}
		})
	}
}

// TestManagerSaveSummary: a rule's own status is written when its entry
// or summary changed, at the version listed, and keeps no pair's progress.
func TestManagerSaveSummary(t *testing.T) {
	e := report.Entry{Namespace: "home", Name: "rule", Rule: true, State: report.StateWaiting, Message: "2 namespaces"}
	sum := status.RuleSummary{Matched: 2, States: map[report.State]int{report.StateWaiting: 2}}
	w := newRecordingWriter()
	mr := &Manager{Env: Env{Writer: w}, Obj: managerObj("u1", 3, "7", nil), Now: sweepNow, Stored: storedWithChecks()}
	if err := mr.SaveSummary(t.Context(), e, sum); err != nil {
		t.Fatal(err)
	}
	if len(w.sent) != 1 || resourceVersionOf(t, w.sent[0].patch) != "7" {
		t.Fatalf("SaveSummary sent %v, want one patch at the version listed", w.sent)
	}
	saved := statusAfter(t, mr.At, mr.Stored, w.sent[0].patch)
	if saved.Rule == nil || saved.Rule.Matched != 2 || saved.Checks != nil || saved.Message != e.Message {
		t.Errorf("SaveSummary wrote %+v", saved)
	}
	for _, tc := range []struct {
		name string
		sum  status.RuleSummary
		want int
	}{
		{"unchanged", sum, 0},
		{"another summary", status.RuleSummary{Matched: 3}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newRecordingWriter()
			mr := &Manager{Env: Env{Writer: w}, Obj: managerObj("u1", 3, "8", nil), Now: sweepNow, Stored: saved}
			if err := mr.SaveSummary(t.Context(), e, tc.sum); err != nil {
				t.Fatal(err)
			}
			if len(w.sent) != tc.want {
				t.Errorf("SaveSummary sent %d patches, want %d", len(w.sent), tc.want)
			}
		})
	}
}

// TestPrior: a prior failure is one the last action's, unless it was only
// deferred (a WEBHOOK not attempted, no failure in a row), or one the
// rule's status told already.
func TestPrior(t *testing.T) {
	failed := func(deferred bool, failures int) *status.LastAction {
		return &status.LastAction{Policy: "p", Action: policy.ActionWebhook, Result: report.ResultFailed, Deferred: deferred, Failures: failures}
	}
	for _, tc := range []struct {
		name  string
		last  *status.LastAction
		told  bool
		want  bool
		pairs bool // a pair only
	}{
		{"none", nil, false, false, false},
		{"succeeded", &status.LastAction{Result: report.ResultSucceeded}, false, false, false},
		{"failed", failed(false, 0), false, true, false},
		{"only deferred", failed(true, 0), false, false, false},
		{"deferred after failures", failed(true, 2), false, true, false},
		{"told by the rule", nil, true, true, true},
		{"succeeded, told by the rule", &status.LastAction{Result: report.ResultSucceeded}, true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			progress := status.Progress{LastAction: tc.last, IgnoredHold: "h", IgnoredAnnotation: "a"}
			pr := &Pair{Stored: status.PairStatus{Progress: progress}, ToldFailure: tc.told}
			if got := pr.Prior(); got.Failed != tc.want || got.Last != tc.last || got.IgnoredHold != "h" || got.IgnoredAnnotation != "a" {
				t.Errorf("Pair.Prior: %+v, want failed %v", got, tc.want)
			}
			if tc.pairs {
				return
			}
			mr := &Manager{Stored: status.Status{Progress: progress, State: report.StateFailed, Stuck: &report.Stuck{Reasons: []report.StuckReason{{Reason: "finalizers"}}}}}
			got := mr.Prior()
			if got.Failed != tc.want || got.Last != tc.last || got.State != report.StateFailed || got.IgnoredHold != "h" || got.Stuck != mr.Stored.Stuck.Cause() {
				t.Errorf("Manager.Prior: %+v, want failed %v", got, tc.want)
			}
		})
	}
}

// A record's write cut by its deadline is that error, not a record written
// (retry.RetryOnConflict alone answers nil for it).
func TestManagerWriteCutByTheDeadlineFails(t *testing.T) {
	w := newRecordingWriter(&url.Error{Op: "Patch", URL: "https://api/", Err: context.DeadlineExceeded})
	mr := &Manager{Env: Env{Writer: w, Clock: func() time.Time { return sweepNow }, ClaimTTL: claimTTL},
		Obj: managerObj("u1", 3, "7", nil), Now: sweepNow, Stored: storedWithChecks()}
	fired := report.Entry{Namespace: "home", Name: "m", Target: "ci-1", State: report.StateFired, Policy: "p"}
	last := &status.LastAction{Policy: "p", Action: policy.ActionScaleDown, Result: report.ResultSucceeded, Time: sweepNow}
	if err := mr.Write(t.Context(), Outcome{Entry: fired, Last: last}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Write: %v, want the deadline's error", err)
	}
	if len(w.sent) == 0 {
		t.Errorf("Write sent nothing: the test did not reach the write")
	}
}
