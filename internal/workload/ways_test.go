package workload

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
)

// object is an object of kind with the given spec and annotations.
func object(kind string, spec map[string]any, annotations map[string]string) *unstructured.Unstructured {
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
		asleepRec   = status.ReplicasAsleepAnnotation
		lbRec       = status.LoadBalancerAnnotation
		lbRecord    = `{"type":"LoadBalancer","loadBalancerClass":"example.com/lb","loadBalancerSourceRanges":["10.0.0.0/8"],"externalTrafficPolicy":"Local","allocateLoadBalancerNodePorts":false}`
	)
	tests := []struct {
		name      string
		way       Way
		to        policy.SleepTo
		w         *unstructured.Unstructured
		wantSleep string // the patch, "" for none
		wantWake  string // the patch, "" for none; "error" for an error
		sleepSays string
		wakeSays  string
	}{
		{name: "replicas at 3", way: Replicas, w: object("Rollout", map[string]any{"replicas": int64(3)}, nil),
			wantSleep: `{"metadata":{"annotations":{"` + replicasRec + `":"3"}},"spec":{"replicas":0}}`, sleepSays: "scale Rollout/w from 3 to 0"},
		{name: "replicas unset count 1", way: Replicas, w: object("Rollout", map[string]any{}, nil),
			wantSleep: `{"metadata":{"annotations":{"` + replicasRec + `":"1"}},"spec":{"replicas":0}}`, sleepSays: "scale Rollout/w from 1 to 0"},
		{name: "replicas asleep", way: Replicas, w: object("Rollout", map[string]any{"replicas": int64(0)}, map[string]string{replicasRec: "3"}),
			wantWake: `{"metadata":{"annotations":{"` + replicasRec + `":null}},"spec":{"replicas":3}}`, wakeSays: "scale Rollout/w from 0 to 3"},
		{name: "replicas scaled since", way: Replicas, w: object("Rollout", map[string]any{"replicas": int64(2)}, map[string]string{replicasRec: "3"}),
			wantSleep: `{"metadata":{"annotations":{"` + replicasRec + `":"2"}},"spec":{"replicas":0}}`, sleepSays: "scale Rollout/w from 2 to 0",
			wantWake: `{"metadata":{"annotations":{"` + replicasRec + `":null}}}`, wakeSays: "leave Rollout/w at 2 replicas: scaled since nsman scaled it down; drop its record of 3"},
		{name: "replicas at 3, to 1", way: Replicas, to: policy.SleepTo{Replicas: 1}, w: object("Rollout", map[string]any{"replicas": int64(3)}, nil),
			wantSleep: `{"metadata":{"annotations":{"` + asleepRec + `":"1","` + replicasRec + `":"3"}},"spec":{"replicas":1}}`, sleepSays: "scale Rollout/w from 3 to 1"},
		{name: "replicas at 1, to 1: left as it is", way: Replicas, to: policy.SleepTo{Replicas: 1}, w: object("Rollout", map[string]any{"replicas": int64(1)}, nil)},
		{name: "replicas unset, to 1: left as it is", way: Replicas, to: policy.SleepTo{Replicas: 1}, w: object("Rollout", map[string]any{}, nil)},
		{name: "replicas at 0, to 2: not scaled up", way: Replicas, to: policy.SleepTo{Replicas: 2}, w: object("Rollout", map[string]any{"replicas": int64(0)}, nil)},
		{name: "replicas asleep at 1", way: Replicas, to: policy.SleepTo{Replicas: 1}, w: object("Rollout", map[string]any{"replicas": int64(1)}, map[string]string{replicasRec: "3", asleepRec: "1"}),
			wantWake: `{"metadata":{"annotations":{"` + asleepRec + `":null,"` + replicasRec + `":null}},"spec":{"replicas":3}}`, wakeSays: "scale Rollout/w from 1 to 3"},
		{name: "replicas asleep at 1, a sleep to 0 leaves it", way: Replicas, w: object("Rollout", map[string]any{"replicas": int64(1)}, map[string]string{replicasRec: "3", asleepRec: "1"}),
			wantWake: `{"metadata":{"annotations":{"` + asleepRec + `":null,"` + replicasRec + `":null}},"spec":{"replicas":3}}`, wakeSays: "scale Rollout/w from 1 to 3"},
		{name: "replicas asleep at 1, scaled to 0 since", way: Replicas, to: policy.SleepTo{Replicas: 1}, w: object("Rollout", map[string]any{"replicas": int64(0)}, map[string]string{replicasRec: "3", asleepRec: "1"}),
			wantWake: `{"metadata":{"annotations":{"` + asleepRec + `":null,"` + replicasRec + `":null}},"spec":{"replicas":3}}`, wakeSays: "scale Rollout/w from 0 to 3"},
		{name: "replicas asleep at 1, scaled to 3 since", way: Replicas, to: policy.SleepTo{Replicas: 1}, w: object("Rollout", map[string]any{"replicas": int64(3)}, map[string]string{replicasRec: "5", asleepRec: "1"}),
			wantSleep: `{"metadata":{"annotations":{"` + asleepRec + `":"1","` + replicasRec + `":"3"}},"spec":{"replicas":1}}`, sleepSays: "scale Rollout/w from 3 to 1",
			wantWake: `{"metadata":{"annotations":{"` + asleepRec + `":null,"` + replicasRec + `":null}}}`, wakeSays: "leave Rollout/w at 3 replicas: scaled since nsman scaled it down; drop its record of 5"},
		{name: "replicas asleep at 1, scaled to 3 since, to 0", way: Replicas, w: object("Rollout", map[string]any{"replicas": int64(3)}, map[string]string{replicasRec: "5", asleepRec: "1"}),
			wantSleep: `{"metadata":{"annotations":{"` + asleepRec + `":null,"` + replicasRec + `":"3"}},"spec":{"replicas":0}}`, sleepSays: "scale Rollout/w from 3 to 0",
			wantWake: `{"metadata":{"annotations":{"` + asleepRec + `":null,"` + replicasRec + `":null}}}`, wakeSays: "leave Rollout/w at 3 replicas: scaled since nsman scaled it down; drop its record of 5"},
		{name: "replicas with a forged record of where it sleeps", way: Replicas, w: object("Rollout", map[string]any{"replicas": int64(1)}, map[string]string{replicasRec: "3", asleepRec: "-1"}),
			wantSleep: `{"metadata":{"annotations":{"` + asleepRec + `":null,"` + replicasRec + `":"1"}},"spec":{"replicas":0}}`, sleepSays: "scale Rollout/w from 1 to 0", wantWake: "error"},
		{name: "cronjob to 1: suspended all the same", way: suspend{}, to: policy.SleepTo{Replicas: 1}, w: object("CronJob", map[string]any{"schedule": "* * * * *"}, nil),
			wantSleep: `{"metadata":{"annotations":{"` + suspendRec + `":"false"}},"spec":{"suspend":true}}`, sleepSays: "suspend CronJob/w"},
		{name: "scaledobject to 1: paused at zero all the same", way: pause{}, to: policy.SleepTo{Replicas: 1}, w: object("ScaledObject", map[string]any{}, nil),
			wantSleep: `{"metadata":{"annotations":{"` + status.KedaPausedReplicas + `":"0","` + pausedRec + `":""}}}`, sleepSays: "pause ScaledObject/w at 0 replicas"},
		{name: "replicas with a forged record", way: Replicas, w: object("Rollout", map[string]any{"replicas": int64(0)}, map[string]string{replicasRec: "-1"}), wantWake: "error"},
		{name: "replicas with a huge record", way: Replicas, w: object("Rollout", map[string]any{"replicas": int64(0)}, map[string]string{replicasRec: "9999999999"}), wantWake: "error"},

		{name: "cronjob running", way: suspend{}, w: object("CronJob", map[string]any{"schedule": "* * * * *"}, nil),
			wantSleep: `{"metadata":{"annotations":{"` + suspendRec + `":"false"}},"spec":{"suspend":true}}`, sleepSays: "suspend CronJob/w"},
		{name: "cronjob suspended before", way: suspend{}, w: object("CronJob", map[string]any{"suspend": true}, nil)},
		{name: "cronjob asleep", way: suspend{}, w: object("CronJob", map[string]any{"suspend": true}, map[string]string{suspendRec: "false"}),
			wantWake: `{"metadata":{"annotations":{"` + suspendRec + `":null}},"spec":{"suspend":false}}`, wakeSays: "resume CronJob/w"},
		{name: "cronjob resumed since", way: suspend{}, w: object("CronJob", map[string]any{"suspend": false}, map[string]string{suspendRec: "false"}),
			wantSleep: `{"metadata":{"annotations":{"` + suspendRec + `":"false"}},"spec":{"suspend":true}}`, sleepSays: "suspend CronJob/w",
			wantWake: `{"metadata":{"annotations":{"` + suspendRec + `":null}}}`, wakeSays: "leave CronJob/w running: resumed since nsman suspended it; drop its record"},
		{name: "cronjob with a forged record", way: suspend{}, w: object("CronJob", map[string]any{"suspend": true}, map[string]string{suspendRec: "true"}), wantWake: "error"},

		{name: "scaledobject unpaused", way: pause{}, w: object("ScaledObject", map[string]any{}, nil),
			wantSleep: `{"metadata":{"annotations":{"` + status.KedaPausedReplicas + `":"0","` + pausedRec + `":""}}}`, sleepSays: "pause ScaledObject/w at 0 replicas"},
		{name: "scaledobject paused at 2", way: pause{}, w: object("ScaledObject", map[string]any{}, map[string]string{status.KedaPausedReplicas: "2"}),
			wantSleep: `{"metadata":{"annotations":{"` + status.KedaPausedReplicas + `":"0","` + pausedRec + `":"2"}}}`, sleepSays: "pause ScaledObject/w at 0 replicas (paused at 2 before)"},
		{name: "scaledobject paused at 0 before", way: pause{}, w: object("ScaledObject", map[string]any{}, map[string]string{status.KedaPausedReplicas: "0"})},
		{name: "scaledobject asleep, unpaused before", way: pause{}, w: object("ScaledObject", map[string]any{}, map[string]string{status.KedaPausedReplicas: "0", pausedRec: ""}),
			wantWake: `{"metadata":{"annotations":{"` + status.KedaPausedReplicas + `":null,"` + pausedRec + `":null}}}`, wakeSays: "unpause ScaledObject/w"},
		{name: "scaledobject asleep, paused at 2 before", way: pause{}, w: object("ScaledObject", map[string]any{}, map[string]string{status.KedaPausedReplicas: "0", pausedRec: "2"}),
			wantWake: `{"metadata":{"annotations":{"` + status.KedaPausedReplicas + `":"2","` + pausedRec + `":null}}}`, wakeSays: "pause ScaledObject/w at 2 replicas again, as before"},
		{name: "scaledobject unpaused since", way: pause{}, w: object("ScaledObject", map[string]any{}, map[string]string{pausedRec: "2"}),
			wantSleep: `{"metadata":{"annotations":{"` + status.KedaPausedReplicas + `":"0","` + pausedRec + `":""}}}`, sleepSays: "pause ScaledObject/w at 0 replicas",
			wantWake: `{"metadata":{"annotations":{"` + pausedRec + `":null}}}`, wakeSays: "leave ScaledObject/w: its pause changed since nsman paused it; drop its record"},
		{name: "loadbalancer, no loadBalancers: left as it is", way: parkLB{}, w: object("Service", lbSpecOf("LoadBalancer"), nil)},
		{name: "loadbalancer parked", way: parkLB{}, to: policy.SleepTo{LoadBalancers: true}, w: object("Service", lbSpecOf("LoadBalancer"), nil),
			wantSleep: `{"metadata":{"annotations":{"` + lbRec + `":"` + jsonEscaped(lbRecord) + `"}},"spec":{"allocateLoadBalancerNodePorts":null,"externalTrafficPolicy":null,"healthCheckNodePort":null,"loadBalancerClass":null,"loadBalancerIP":null,"loadBalancerSourceRanges":null,"type":"ClusterIP"}}`,
			sleepSays: "park Service/w as ClusterIP"},
		{name: "clusterip: left as it is", way: parkLB{}, to: policy.SleepTo{LoadBalancers: true}, w: object("Service", map[string]any{"type": "ClusterIP"}, nil)},
		{name: "nodeport: left as it is", way: parkLB{}, to: policy.SleepTo{LoadBalancers: true}, w: object("Service", map[string]any{"type": "NodePort"}, nil)},
		{name: "loadbalancer of too many source ranges: left, saying why", way: parkLB{}, to: policy.SleepTo{LoadBalancers: true},
			w:         object("Service", map[string]any{"type": "LoadBalancer", "loadBalancerSourceRanges": manyRanges(200)}, nil),
			sleepSays: "leave Service/w a LoadBalancer: its record would be 3142 bytes, more than the 2048 nsman keeps"},
		{name: "loadbalancer asleep", way: parkLB{}, to: policy.SleepTo{LoadBalancers: true}, w: object("Service", map[string]any{"type": "ClusterIP"}, map[string]string{lbRec: lbRecord}),
			wantWake: `{"metadata":{"annotations":{"` + lbRec + `":null}},"spec":{"allocateLoadBalancerNodePorts":false,"externalTrafficPolicy":"Local","loadBalancerClass":"example.com/lb","loadBalancerSourceRanges":["10.0.0.0/8"],"type":"LoadBalancer"}}`,
			wakeSays: "unpark Service/w as LoadBalancer"},
		{name: "loadbalancer asleep, a bare record", way: parkLB{}, w: object("Service", map[string]any{"type": "ClusterIP"}, map[string]string{lbRec: `{"type":"LoadBalancer"}`}),
			wantWake: `{"metadata":{"annotations":{"` + lbRec + `":null}},"spec":{"type":"LoadBalancer"}}`, wakeSays: "unpark Service/w as LoadBalancer"},
		{name: "loadbalancer made a NodePort since", way: parkLB{}, w: object("Service", map[string]any{"type": "NodePort"}, map[string]string{lbRec: lbRecord}),
			wantWake: `{"metadata":{"annotations":{"` + lbRec + `":null}}}`, wakeSays: "leave Service/w of type NodePort: changed since nsman parked it; drop its record"},
		{name: "loadbalancer with a forged record", way: parkLB{}, w: object("Service", map[string]any{"type": "ClusterIP"}, map[string]string{lbRec: `{"type":"NodePort"}`}), wantWake: "error"},
		{name: "loadbalancer with a record not JSON", way: parkLB{}, w: object("Service", map[string]any{"type": "ClusterIP"}, map[string]string{lbRec: "LoadBalancer"}), wantWake: "error"},
		{name: "scaledobject with a forged record", way: pause{}, w: object("ScaledObject", map[string]any{}, map[string]string{status.KedaPausedReplicas: "0", pausedRec: "all"}), wantWake: "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := tt.w.GetKind() + "/w"
			patch, says := tt.way.Sleep(id, tt.w, tt.to)
			if got := patchJSON(patch); got != tt.wantSleep || says != tt.sleepSays {
				t.Errorf("sleep: %s %q, want %s %q", got, says, tt.wantSleep, tt.sleepSays)
			}
			patch, says, err := tt.way.Wake(id, tt.w)
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

// lbSpecOf is a Service's spec of type typ, with what a LoadBalancer
// needs back when parked.
func lbSpecOf(typ string) map[string]any {
	return map[string]any{"type": typ, "loadBalancerClass": "example.com/lb", "loadBalancerSourceRanges": []any{"10.0.0.0/8"},
		"externalTrafficPolicy": "Local", "allocateLoadBalancerNodePorts": false, "ports": []any{map[string]any{"port": int64(80), "nodePort": int64(30080)}}}
}

// manyRanges are n source ranges.
func manyRanges(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = fmt.Sprintf("10.%d.0.0/16", i%250)
	}
	return out
}

// jsonEscaped is s as it reads inside a JSON string.
func jsonEscaped(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}
