package record

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	metadatafake "k8s.io/client-go/metadata/fake"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

const ruleUID = types.UID("0b6f2c1e-5d0a-4b8e-9a61-7e3f1c2d4a5b")

var (
	pairKey, legacyKey = status.PairAnnotation(ruleUID), status.LegacyPairAnnotation(ruleUID)
	teamLabels         = map[string]string{"team": "a"}
)

// listedNamespace is namespace team-a as listed at resourceVersion 7, with
// annotations pairs.
func listedNamespace(pairs map[string]string) cluster.Namespace {
	return cluster.Namespace{Name: "team-a", UID: "ns-uid", ResourceVersion: "7", Labels: cluster.PackLabels("team-a", teamLabels), Pairs: cluster.AnnotationsOf(pairs)}
}

// namespaceReader answers a re-read of team-a with ns, or with none when
// ns is nil.
func namespaceReader(t *testing.T, ns *metav1.PartialObjectMetadata) cluster.Reader {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var objs []runtime.Object
	if ns != nil {
		ns.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}
		objs = append(objs, ns)
	}
	return cluster.Reader{Clients: cluster.Clients{Metadata: metadatafake.NewSimpleMetadataClient(scheme, objs...)}}
}

func newPair(w write.Writer, reads cluster.Reader, listed cluster.Namespace, stored status.PairStatus) *Pair {
	_, at := Of(listed, pairKey, legacyKey)
	return &Pair{Env: Env{Writer: w, Reads: reads, Clock: func() time.Time { return sweepNow }, ClaimTTL: claimTTL},
		Rule: &policy.Manager{Namespace: "home", Name: "rule", UID: ruleUID, Generation: 2, Arming: "arm-2"},
		Key:  pairKey, Legacy: legacyKey, At: at, Namespace: listed, Now: sweepNow, Stored: stored}
}

// mergedAnnotations is what merge patch p sets of the namespace: its
// annotations (a removed one nil), resourceVersion and uid.
func mergedAnnotations(t *testing.T, p write.Patch) (annotations map[string]*string, resourceVersion, uid string) {
	t.Helper()
	if p.JSON {
		t.Fatalf("patch %s is no merge patch", p.Body)
	}
	var body struct {
		Metadata struct {
			Annotations     map[string]*string `json:"annotations"`
			ResourceVersion string             `json:"resourceVersion"`
			UID             string             `json:"uid"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(p.Body, &body); err != nil {
		t.Fatal(err)
	}
	return body.Metadata.Annotations, body.Metadata.ResourceVersion, body.Metadata.UID
}

func decodePair(t *testing.T, raw string) status.PairStatus {
	t.Helper()
	var st status.PairStatus
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		t.Fatalf("record %q: %v", raw, err)
	}
	return st
}

// TestPairClaim: a pair's claim is a merge patch of its annotation at the
// namespace's resourceVersion as listed, moving a legacy record to the
// key; on a conflict the namespace is read again and claimed at the
// version read only while the decision stands.
func TestPairClaim(t *testing.T) {
	was := write.MustJSON(status.PairStatus{Rule: "home/rule", Progress: status.Progress{Checks: map[string]policy.CheckState{"p": {Generation: 2, Passed: 1}}}})
	claim := status.Claim{Policy: "p", Action: policy.ActionDelete, Sweep: "s2", Expires: sweepNow.Add(claimTTL), Generation: 2, TargetUID: "ns-uid"}
	now := func(rv string, labels map[string]string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "team-a", UID: "ns-uid", ResourceVersion: rv, Labels: labels, Annotations: map[string]string{pairKey: was}}}
	}
	for _, tc := range []struct {
		name        string
		pairs       map[string]string
		final       bool
		answers     []error
		now         *metav1.PartialObjectMetadata
		wantRVs     []string
		wantChanged bool
	}{
		{name: "no record", final: true, wantRVs: []string{"7"}},
		{name: "a record, a stage", pairs: map[string]string{pairKey: was}, wantRVs: []string{"7"}},
		{name: "a legacy record moved", pairs: map[string]string{legacyKey: was}, final: true, wantRVs: []string{"7"}},
		{name: "changed since, not what the decision rests on", pairs: map[string]string{pairKey: was}, final: true,
			answers: []error{conflict()}, now: now("8", teamLabels), wantRVs: []string{"7", "8"}},
		{name: "labels changed since", pairs: map[string]string{pairKey: was}, final: true,
			answers: []error{conflict()}, now: now("8", map[string]string{"team": "b"}), wantRVs: []string{"7"}, wantChanged: true},
		{name: "gone since", pairs: map[string]string{pairKey: was}, final: true,
			answers: []error{conflict()}, wantRVs: []string{"7"}, wantChanged: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newRecordingWriter(tc.answers...)
			pr := newPair(w, namespaceReader(t, tc.now), listedNamespace(tc.pairs), decodePair(t, was))
			err := pr.Claim(t.Context(), claim, report.Entry{}, tc.final)
			if (err != nil) != tc.wantChanged || write.ChangedSinceListed(err) != tc.wantChanged || (pr.claimed == nil) != tc.wantChanged {
				t.Fatalf("Claim: %v, claimed %v; want changed since listed %v", err, pr.claimed, tc.wantChanged)
			}
			if len(w.sent) != len(tc.wantRVs) {
				t.Fatalf("Claim sent %d patches, want %d", len(w.sent), len(tc.wantRVs))
			}
			for i, p := range w.sent {
				annotations, rv, _ := mergedAnnotations(t, p.patch)
				if p.target != "team-a" || rv != tc.wantRVs[i] {
					t.Errorf("patch %d of %s at resourceVersion %q, want team-a at %q", i, p.target, rv, tc.wantRVs[i])
				}
				legacy, removes := annotations[legacyKey]
				if _, listed := tc.pairs[legacyKey]; removes != listed || legacy != nil {
					t.Errorf("patch %d %s: removes the legacy key %v, want %v", i, p.patch.Body, removes, listed)
				}
				if annotations[pairKey] == nil {
					t.Fatalf("patch %d %s writes no record", i, p.patch.Body)
				}
				got := decodePair(t, *annotations[pairKey])
				if got.Rule != "home/rule" || got.Claim == nil || got.Claim.Sweep != "s2" || got.Claim.Spec != "arm-2" || (got.Checks == nil) != tc.final {
					t.Errorf("patch %d claims %+v (claim %+v); want the rule's claim of spec arm-2, checks dropped only when final", i, got, got.Claim)
				}
			}
		})
	}
}

// TestPairWrite: after a claim the record replaces the claim if it is
// still this sweep's; an action's outcome without one replaces the record
// as listed (moving a legacy one, merged on the uid where there was none);
// otherwise a waiting pair's progress is written as listed, and nothing
// when there is none to keep.
func TestPairWrite(t *testing.T) {
	was := write.MustJSON(status.PairStatus{Rule: "home/rule", Progress: status.Progress{IgnoredHold: "h"}})
	failed := &status.LastAction{Policy: "p", Action: policy.ActionDelete, Result: report.ResultFailed, Message: "boom", Time: sweepNow}
	waiting := report.Entry{State: report.StateWaiting, HoldIgnored: "h"}
	checks := map[string]policy.CheckState{"p": {Generation: 2, Passed: 1, Last: sweepNow}}
	for _, tc := range []struct {
		name     string
		pairs    map[string]string
		claim    bool
		o        Outcome
		answer   error
		wantOps  []string // of a JSON patch; nil: a merge patch, or none
		wantTest string   // the annotation a JSON patch tests
		// wantMerge: a merge patch on the uid (uid) or at the version
		// listed (rv); "": no patch of the record.
		wantMerge string
		wantLost  bool // LostClaim
		wantErr   bool // ChangedSinceListed
		// wantDated: the record holds no other time, so it is dated now.
		wantDated bool
	}{
		{name: "after a claim", pairs: map[string]string{pairKey: was}, claim: true, o: Outcome{Entry: waiting, Last: failed},
			wantOps: []string{"test", "replace"}, wantTest: pairKey},
		{name: "after a claim, lost", pairs: map[string]string{pairKey: was}, claim: true, o: Outcome{Entry: waiting, Last: failed},
			answer: invalid(), wantOps: []string{"test", "replace"}, wantTest: pairKey, wantLost: true},
		{name: "an outcome, the record as listed", pairs: map[string]string{pairKey: was}, o: Outcome{Entry: waiting, Last: failed},
			wantOps: []string{"test", "replace"}, wantTest: pairKey},
		{name: "an outcome, a legacy record moved", pairs: map[string]string{legacyKey: was}, o: Outcome{Entry: waiting, Last: failed},
			wantOps: []string{"test", "remove", "add"}, wantTest: legacyKey},
		{name: "an outcome, no record", o: Outcome{Entry: waiting, Last: failed}, wantMerge: "uid"},
		{name: "an outcome, the record changed since", pairs: map[string]string{pairKey: was}, o: Outcome{Entry: waiting, Last: failed},
			answer: invalid(), wantOps: []string{"test", "replace"}, wantTest: pairKey, wantErr: true},
		{name: "an outcome, a stage fired", pairs: map[string]string{pairKey: was},
			o:       Outcome{Entry: report.Entry{State: report.StateFired}, Last: &status.LastAction{Policy: "p", Action: policy.ActionScaleDown, Result: report.ResultSucceeded}, Stage: "p"},
			wantOps: []string{"test", "replace"}, wantTest: pairKey},
		{name: "waiting, nothing new", pairs: map[string]string{pairKey: was}, o: Outcome{Entry: waiting}},
		{name: "a DELETE confirmed: the record went with the namespace", pairs: map[string]string{pairKey: was}, o: Outcome{Entry: report.Entry{State: report.StateFired}, Done: true}},
		{name: "waiting, warned", pairs: map[string]string{pairKey: was}, o: Outcome{Entry: waiting, Warned: &status.Warned{Policy: "p", Due: sweepNow, Before: []string{"1h0m0s"}}},
			wantMerge: "rv", wantDated: true},
		{name: "waiting, checks passed", pairs: map[string]string{pairKey: was}, o: Outcome{Entry: waiting, Checks: checks}, wantMerge: "rv"},
		{name: "waiting, a hold no longer ignored", pairs: map[string]string{pairKey: was}, o: Outcome{Entry: report.Entry{State: report.StateWaiting}}, wantMerge: "rv", wantDated: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newRecordingWriter()
			pr := newPair(w, namespaceReader(t, nil), listedNamespace(tc.pairs), decodePair(t, was))
			if tc.claim {
				if err := pr.Claim(t.Context(), status.Claim{Policy: "p", Action: policy.ActionDelete, Sweep: "s2"}, report.Entry{}, true); err != nil {
					t.Fatal(err)
				}
				w.sent = nil
			}
			w.answers = []error{tc.answer}
			err := pr.Write(t.Context(), tc.o)
			if (err != nil) != (tc.wantLost || tc.wantErr) || write.LostClaim(err) != tc.wantLost || write.ChangedSinceListed(err) != tc.wantErr {
				t.Errorf("Write: %v; want lost claim %v, changed since listed %v", err, tc.wantLost, tc.wantErr)
			}
			want := 0
			if tc.wantOps != nil || tc.wantMerge != "" {
				want = 1
			}
			if len(w.sent) != want {
				t.Fatalf("Write sent %d patches, want %d", len(w.sent), want)
			}
			if want == 0 {
				return
			}
			p := w.sent[0].patch
			var written string
			if tc.wantOps != nil {
				ops := jsonOps(t, p)
				var names []string
				for _, op := range ops {
					names = append(names, op.Op)
				}
				if len(names) != len(tc.wantOps) || names[0] != "test" || ops[0].Path != write.AnnotationPointer(tc.wantTest) {
					t.Fatalf("Write sent %s, want ops %v testing %s", p.Body, tc.wantOps, tc.wantTest)
				}
				for i := range names {
					if names[i] != tc.wantOps[i] {
						t.Fatalf("Write sent %s, want ops %v", p.Body, tc.wantOps)
					}
				}
				wantWas := was
				if tc.claim {
					wantWas = write.MustJSON(*pr.claimed)
				}
				if ops[0].Value != wantWas {
					t.Errorf("Write tests %v, want %s", ops[0].Value, wantWas)
				}
				last := ops[len(ops)-1]
				if last.Path != write.AnnotationPointer(pairKey) {
					t.Errorf("Write writes %s, want %s", last.Path, write.AnnotationPointer(pairKey))
				}
				written, _ = last.Value.(string)
			} else {
				annotations, rv, uid := mergedAnnotations(t, p)
				if (tc.wantMerge == "uid") != (uid == "ns-uid" && rv == "") || (tc.wantMerge == "rv") != (rv == "7" && uid == "") {
					t.Errorf("Write sent %s, want a merge patch on the %s", p.Body, tc.wantMerge)
				}
				if annotations[pairKey] == nil {
					t.Fatalf("Write sent %s, no record", p.Body)
				}
				written = *annotations[pairKey]
			}
			got := decodePair(t, written)
			if got.Rule != "home/rule" || got.Claim != nil || got.IgnoredHold != tc.o.Entry.HoldIgnored {
				t.Errorf("Write wrote %+v", got)
			}
			if tc.o.Last != nil && (got.LastAction == nil || got.LastAction.Result != tc.o.Last.Result || got.ObservedGeneration != 2 || got.Spec != "arm-2") {
				t.Errorf("Write wrote %+v, want the last action at the rule's generation and spec", got)
			}
			if tc.o.Stage != "" && len(got.Fired) != 1 {
				t.Errorf("Write wrote fired %+v, want the stage", got.Fired)
			}
			if dated := got.Written != nil && got.Written.Equal(sweepNow); dated != tc.wantDated {
				t.Errorf("Write wrote %+v, want it dated %s: %v", got, sweepNow, tc.wantDated)
			}
		})
	}
}

// TestPairWriteAsListedOnAConflict: a waiting pair's record changed since
// listed is written at the version read again only while the namespace is
// as the decision saw it.
func TestPairWriteAsListedOnAConflict(t *testing.T) {
	for _, tc := range []struct {
		name    string
		now     *metav1.PartialObjectMetadata
		wantRVs []string
		wantErr bool
	}{
		{"unchanged", &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "team-a", UID: "ns-uid", ResourceVersion: "8", Labels: teamLabels}}, []string{"7", "8"}, false},
		{"recreated", &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "team-a", UID: "other", ResourceVersion: "8", Labels: teamLabels}}, []string{"7"}, true},
		{"held", &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "team-a", UID: "ns-uid", ResourceVersion: "8", Labels: teamLabels,
			Annotations: map[string]string{status.HoldAnnotation: "until friday"}}}, []string{"7"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newRecordingWriter(apierrors.NewConflict(managerGR, "team-a", errors.New("modified")))
			pr := newPair(w, namespaceReader(t, tc.now), listedNamespace(nil), status.PairStatus{})
			err := pr.Write(t.Context(), Outcome{Entry: report.Entry{State: report.StateWaiting}, Checks: map[string]policy.CheckState{"p": {Passed: 1}}})
			if (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, write.ErrChanged)) {
				t.Errorf("Write: %v, want ErrChanged %v", err, tc.wantErr)
			}
			if len(w.sent) != len(tc.wantRVs) {
				t.Fatalf("Write sent %d patches, want %d", len(w.sent), len(tc.wantRVs))
			}
			for i, p := range w.sent {
				if _, rv, _ := mergedAnnotations(t, p.patch); rv != tc.wantRVs[i] {
					t.Errorf("patch %d at %q, want %q", i, rv, tc.wantRVs[i])
				}
			}
		})
	}
}

// TestUnchanged: what each kind of record's decision rests on, read again.
func TestUnchanged(t *testing.T) {
	record := write.MustJSON(status.PairStatus{Rule: "home/rule"})
	listed := cluster.Namespace{Name: "team-a", UID: "ns-uid", ResourceVersion: "7", Labels: cluster.PackLabels("team-a", teamLabels),
		Hold: "", Expires: "2026-04-01T00:00:00Z", Touched: "2026-03-01T00:00:00Z",
		Pairs: cluster.AnnotationsOf(map[string]string{pairKey: record, status.PairAnnotation("other-rule"): "x"})}
	idle := []policy.Policy{{Name: "idle", Condition: policy.Condition{Type: policy.ConditionIdle}}}
	for _, tc := range []struct {
		name          string
		change        func(*cluster.Namespace)
		idles         bool
		pair, manager bool
	}{
		{"as listed", func(*cluster.Namespace) {}, false, true, true},
		{"another resourceVersion", func(ns *cluster.Namespace) { ns.ResourceVersion = "8" }, false, true, true},
		{"recreated", func(ns *cluster.Namespace) { ns.UID = "other" }, false, false, false},
		{"terminating", func(ns *cluster.Namespace) { ns.Terminating = true }, false, false, false},
		{"relabelled", func(ns *cluster.Namespace) { ns.Labels = cluster.PackLabels("team-a", map[string]string{"team": "b"}) }, false, false, true},
		{"held", func(ns *cluster.Namespace) { ns.Hold = "until friday" }, false, false, false},
		{"expiry moved", func(ns *cluster.Namespace) { ns.Expires = "2026-05-01T00:00:00Z" }, false, false, false},
		{"touched, no IDLE policy", func(ns *cluster.Namespace) { ns.Touched = "2026-03-02T00:00:00Z" }, false, true, false},
		{"touched, an IDLE policy", func(ns *cluster.Namespace) { ns.Touched = "2026-03-02T00:00:00Z" }, true, false, false},
		{"the pair's record", func(ns *cluster.Namespace) { ns.Pairs = cluster.AnnotationsOf(map[string]string{pairKey: "{}"}) }, false, false, true},
		{"the pair's legacy record", func(ns *cluster.Namespace) {
			ns.Pairs = cluster.AnnotationsOf(map[string]string{pairKey: record, legacyKey: "{}", status.PairAnnotation("other-rule"): "x"})
		}, false, false, true},
		{"another rule's record", func(ns *cluster.Namespace) {
			ns.Pairs = cluster.AnnotationsOf(map[string]string{pairKey: record, status.PairAnnotation("other-rule"): "y"})
		}, false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := listed
			tc.change(&now)
			pr := newPair(nil, cluster.Reader{}, listed, status.PairStatus{})
			if tc.idles {
				pr.Rule.Policies = idle
			}
			if got := pr.Unchanged(listed, now); got != tc.pair {
				t.Errorf("Pair.Unchanged: %v, want %v", got, tc.pair)
			}
			if got := (&Manager{}).Unchanged(listed, now); got != tc.manager {
				t.Errorf("Manager.Unchanged: %v, want %v", got, tc.manager)
			}
		})
	}
}
