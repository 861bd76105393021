package execute

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
)

// workload is an object of kind with the given spec and annotations.
func workload(kind string, spec map[string]any, annotations map[string]string) *unstructured.Unstructured {
	w := &unstructured.Unstructured{Object: map[string]any{"kind": kind, "metadata": map[string]any{"name": "w", "namespace": "ns"}, "spec": spec}}
	if annotations != nil {
		w.SetAnnotations(annotations)
	}
	return w
}

func TestWays(t *testing.T) {
	const (
		replicasRec = status.ReplicasAnnotation
		suspendRec  = status.SuspendAnnotation
		pausedRec   = status.PausedReplicasAnnotation
	)
	tests := []struct {
		name      string
		way       way
		w         *unstructured.Unstructured
		wantSleep string // the patch, "" for none
		wantWake  string // the patch, "" for none; "error" for an error
		sleepSays string
		wakeSays  string
	}{
		{name: "replicas at 3", way: replicas{}, w: workload("Rollout", map[string]any{"replicas": int64(3)}, nil),
			wantSleep: `{"metadata":{"annotations":{"` + replicasRec + `":"3"}},"spec":{"replicas":0}}`, sleepSays: "scale Rollout/w from 3 to 0"},
		{name: "replicas unset count 1", way: replicas{}, w: workload("Rollout", map[string]any{}, nil),
			wantSleep: `{"metadata":{"annotations":{"` + replicasRec + `":"1"}},"spec":{"replicas":0}}`, sleepSays: "scale Rollout/w from 1 to 0"},
		{name: "replicas asleep", way: replicas{}, w: workload("Rollout", map[string]any{"replicas": int64(0)}, map[string]string{replicasRec: "3"}),
			wantWake: `{"metadata":{"annotations":{"` + replicasRec + `":null}},"spec":{"replicas":3}}`, wakeSays: "scale Rollout/w from 0 to 3"},
		{name: "replicas scaled since", way: replicas{}, w: workload("Rollout", map[string]any{"replicas": int64(2)}, map[string]string{replicasRec: "3"}),
			wantSleep: `{"metadata":{"annotations":{"` + replicasRec + `":"2"}},"spec":{"replicas":0}}`, sleepSays: "scale Rollout/w from 2 to 0",
			wantWake: `{"metadata":{"annotations":{"` + replicasRec + `":null}}}`, wakeSays: "leave Rollout/w at 2 replicas: scaled since nsman scaled it down; drop its record of 3"},
		{name: "replicas with a forged record", way: replicas{}, w: workload("Rollout", map[string]any{"replicas": int64(0)}, map[string]string{replicasRec: "-1"}), wantWake: "error"},
		{name: "replicas with a huge record", way: replicas{}, w: workload("Rollout", map[string]any{"replicas": int64(0)}, map[string]string{replicasRec: "9999999999"}), wantWake: "error"},

		{name: "cronjob running", way: suspend{}, w: workload("CronJob", map[string]any{"schedule": "* * * * *"}, nil),
			wantSleep: `{"metadata":{"annotations":{"` + suspendRec + `":"false"}},"spec":{"suspend":true}}`, sleepSays: "suspend CronJob/w"},
		{name: "cronjob suspended before", way: suspend{}, w: workload("CronJob", map[string]any{"suspend": true}, nil)},
		{name: "cronjob asleep", way: suspend{}, w: workload("CronJob", map[string]any{"suspend": true}, map[string]string{suspendRec: "false"}),
			wantWake: `{"metadata":{"annotations":{"` + suspendRec + `":null}},"spec":{"suspend":false}}`, wakeSays: "resume CronJob/w"},
		{name: "cronjob resumed since", way: suspend{}, w: workload("CronJob", map[string]any{"suspend": false}, map[string]string{suspendRec: "false"}),
			wantSleep: `{"metadata":{"annotations":{"` + suspendRec + `":"false"}},"spec":{"suspend":true}}`, sleepSays: "suspend CronJob/w",
			wantWake: `{"metadata":{"annotations":{"` + suspendRec + `":null}}}`, wakeSays: "leave CronJob/w running: resumed since nsman suspended it; drop its record"},
		{name: "cronjob with a forged record", way: suspend{}, w: workload("CronJob", map[string]any{"suspend": true}, map[string]string{suspendRec: "true"}), wantWake: "error"},

		{name: "scaledobject unpaused", way: pause{}, w: workload("ScaledObject", map[string]any{}, nil),
			wantSleep: `{"metadata":{"annotations":{"` + status.KedaPausedReplicas + `":"0","` + pausedRec + `":""}}}`, sleepSays: "pause ScaledObject/w at 0 replicas"},
		{name: "scaledobject paused at 2", way: pause{}, w: workload("ScaledObject", map[string]any{}, map[string]string{status.KedaPausedReplicas: "2"}),
			wantSleep: `{"metadata":{"annotations":{"` + status.KedaPausedReplicas + `":"0","` + pausedRec + `":"2"}}}`, sleepSays: "pause ScaledObject/w at 0 replicas (paused at 2 before)"},
		{name: "scaledobject paused at 0 before", way: pause{}, w: workload("ScaledObject", map[string]any{}, map[string]string{status.KedaPausedReplicas: "0"})},
		{name: "scaledobject asleep, unpaused before", way: pause{}, w: workload("ScaledObject", map[string]any{}, map[string]string{status.KedaPausedReplicas: "0", pausedRec: ""}),
			wantWake: `{"metadata":{"annotations":{"` + status.KedaPausedReplicas + `":null,"` + pausedRec + `":null}}}`, wakeSays: "unpause ScaledObject/w"},
		{name: "scaledobject asleep, paused at 2 before", way: pause{}, w: workload("ScaledObject", map[string]any{}, map[string]string{status.KedaPausedReplicas: "0", pausedRec: "2"}),
			wantWake: `{"metadata":{"annotations":{"` + status.KedaPausedReplicas + `":"2","` + pausedRec + `":null}}}`, wakeSays: "pause ScaledObject/w at 2 replicas again, as before"},
		{name: "scaledobject unpaused since", way: pause{}, w: workload("ScaledObject", map[string]any{}, map[string]string{pausedRec: "2"}),
			wantSleep: `{"metadata":{"annotations":{"` + status.KedaPausedReplicas + `":"0","` + pausedRec + `":""}}}`, sleepSays: "pause ScaledObject/w at 0 replicas",
			wantWake: `{"metadata":{"annotations":{"` + pausedRec + `":null}}}`, wakeSays: "leave ScaledObject/w: its pause changed since nsman paused it; drop its record"},
		{name: "scaledobject with a forged record", way: pause{}, w: workload("ScaledObject", map[string]any{}, map[string]string{status.KedaPausedReplicas: "0", pausedRec: "all"}), wantWake: "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := tt.w.GetKind() + "/w"
			patch, says := tt.way.sleep(id, tt.w)
			if got := patchJSON(patch); got != tt.wantSleep || says != tt.sleepSays {
				t.Errorf("sleep: %s %q, want %s %q", got, says, tt.wantSleep, tt.sleepSays)
			}
			patch, says, err := tt.way.wake(id, tt.w)
			if tt.wantWake == "error" {
				if err == nil || !strings.HasPrefix(err.Error(), id+": annotation ") {
					t.Errorf("wake: error %v, want one naming %s and its record", err, id)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := patchJSON(patch); got != tt.wantWake || says != tt.wakeSays {
				t.Errorf("wake: %s %q, want %s %q", got, says, tt.wantWake, tt.wakeSays)
			}
		})
	}
}

// patchJSON is patch as JSON, "" for nil.
func patchJSON(patch map[string]any) string {
	if patch == nil {
		return ""
	}
	b, _ := json.Marshal(patch)
	return string(b)
}

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
			if _, _, err := Sleep(t.Context(), cluster.Clients{}, w, deploymentKind, listed(d)); err != nil {
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
