package execute

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
)

// A workload Flux applies is kept from being reverted while asleep: the
// sleep turns Flux's reconcile off and records what it was, the wake
// brings that back; one Flux does not apply, or whose reconcile is off
// already, keeps its annotations.
func TestSleepAndWakeTurnFluxOffAndBack(t *testing.T) {
	flux := map[string]string{status.FluxNameLabel: "apps"}
	for _, tt := range []struct {
		name        string
		labels      map[string]string
		annotations map[string]string
		// wantSleep and wantWake are the Flux annotations the patches set
		// ("null" removes), "" when untouched.
		wantSleep, wantRecord, wantWake string
	}{
		{name: "applied by Flux", labels: flux, wantSleep: `"disabled"`, wantRecord: `""`, wantWake: "null"},
		{name: "applied by Flux, reconcile enabled", labels: flux, annotations: map[string]string{status.FluxReconcileAnnotation: "enabled"},
			wantSleep: `"disabled"`, wantRecord: `"enabled"`, wantWake: `"enabled"`},
		{name: "applied by Flux, reconcile off already", labels: flux, annotations: map[string]string{status.FluxReconcileAnnotation: "disabled"}},
		{name: "not applied by Flux"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := &conflictOnce{Writer: dryRun, patches: [][]byte{nil}} // no conflict
			d := deployment(2, "1")
			d.SetLabels(tt.labels)
			d.SetAnnotations(tt.annotations)
			if _, _, err := Sleep(t.Context(), cluster.Clients{}, w, deploymentKind, listed(d), policy.SleepTo{}); err != nil {
				t.Fatal(err)
			}
			slept := annotationsOf(t, w.patches[1])
			if got := slept[status.FluxReconcileAnnotation]; got != tt.wantSleep || slept[status.ReconcileAnnotation] != tt.wantRecord {
				t.Errorf("sleep set reconcile %s, record %s; want %s, %s", got, slept[status.ReconcileAnnotation], tt.wantSleep, tt.wantRecord)
			}
			asleep := deployment(0, "2")
			asleep.SetLabels(tt.labels)
			recorded := map[string]string{status.ReplicasAnnotation: "2"}
			if tt.wantRecord != "" {
				recorded[status.FluxReconcileAnnotation] = "disabled"
				recorded[status.ReconcileAnnotation] = strings.Trim(tt.wantRecord, `"`)
			}
			asleep.SetAnnotations(recorded)
			if _, err := Wake(t.Context(), cluster.Clients{}, w, deploymentKind, listed(asleep)); err != nil {
				t.Fatal(err)
			}
			woken := annotationsOf(t, w.patches[2])
			wantRecordGone := map[bool]string{true: "null", false: ""}[tt.wantRecord != ""]
			if got := woken[status.FluxReconcileAnnotation]; got != tt.wantWake || woken[status.ReconcileAnnotation] != wantRecordGone {
				t.Errorf("wake set reconcile %s, record %s; want %s, %s", got, woken[status.ReconcileAnnotation], tt.wantWake, wantRecordGone)
			}
		})
	}
}

// annotationsOf is what merge patch p sets of the annotations, each value
// as JSON.
func annotationsOf(t *testing.T, p []byte) map[string]string {
	t.Helper()
	var patch struct {
		Metadata struct {
			Annotations map[string]json.RawMessage `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(p, &patch); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for k, v := range patch.Metadata.Annotations {
		out[k] = string(v)
	}
	return out
}
