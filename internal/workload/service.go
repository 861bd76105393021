package workload

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
)

// loadBalancer is a Service of type LoadBalancer, parked as ClusterIP by a
// sleep with params.loadBalancers: no selector names it (it runs no pod),
// the parameter alone adds it to what sleeps. Listing only the Services of
// type LoadBalancer (a field selector the API server answers) keeps a
// sweep's reads of what is awake from growing with a namespace's other
// Services.
var loadBalancer = Known{
	Name: "Service", Resource: schema.GroupVersionResource{Version: "v1", Resource: "services"},
	Way: parkLB{}, Why: "SCALE_DOWN and SLEEP with loadBalancers, and restore: Services of type LoadBalancer parked as ClusterIP",
	Parks:       func(to policy.SleepTo) bool { return to.LoadBalancers },
	AwakeFields: "spec.type=" + typeLoadBalancer,
}

const (
	typeLoadBalancer = "LoadBalancer"
	typeClusterIP    = "ClusterIP"
)

// maxLoadBalancerRecord bounds a Service's record (its source ranges make
// it long): a Service whose record would be longer is left a
// LoadBalancer, as the effect says, rather than parked with a record a
// wake would refuse to read.
const maxLoadBalancerRecord = 2048

// typeField is spec.type in fieldsV1 keys, made once.
var typeField = []string{"f:spec", "f:type"}

// lbRecord is what a LoadBalancer needs back that its change to ClusterIP
// clears: the API server refuses a ClusterIP with a class, source ranges
// or an external traffic policy, and drops its node ports and health
// check node port itself (allocated again at the wake).
type lbRecord struct {
	Type                          string   `json:"type"`
	LoadBalancerClass             *string  `json:"loadBalancerClass,omitempty"`
	LoadBalancerIP                string   `json:"loadBalancerIP,omitempty"`
	LoadBalancerSourceRanges      []string `json:"loadBalancerSourceRanges,omitempty"`
	ExternalTrafficPolicy         string   `json:"externalTrafficPolicy,omitempty"`
	AllocateLoadBalancerNodePorts *bool    `json:"allocateLoadBalancerNodePorts,omitempty"`
}

// parkLB is a Service of type LoadBalancer's way.
type parkLB struct{}

// Sleep parks w as ClusterIP when to asks for load balancers and w is a
// LoadBalancer, recording the fields the change clears; their nulls in
// the patch clear them, and the API server drops the node ports.
func (parkLB) Sleep(id string, w *unstructured.Unstructured, to policy.SleepTo) (map[string]any, string) {
	spec := lbSpec(w)
	if !to.LoadBalancers || spec.Type != typeLoadBalancer {
		return nil, ""
	}
	rec := lbRecord{Type: spec.Type, LoadBalancerClass: spec.LoadBalancerClass, LoadBalancerIP: spec.LoadBalancerIP,
		LoadBalancerSourceRanges: spec.LoadBalancerSourceRanges, ExternalTrafficPolicy: spec.ExternalTrafficPolicy,
		AllocateLoadBalancerNodePorts: spec.AllocateLoadBalancerNodePorts}
	raw, err := json.Marshal(rec)
	if err != nil || len(raw) > maxLoadBalancerRecord {
		return nil, fmt.Sprintf("leave %s a LoadBalancer: its record would be %d bytes, more than the %d nsman keeps", id, len(raw), maxLoadBalancerRecord)
	}
	return map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{status.LoadBalancerAnnotation: string(raw)}},
		"spec": map[string]any{
			"type": typeClusterIP, "loadBalancerClass": nil, "loadBalancerIP": nil, "loadBalancerSourceRanges": nil,
			"externalTrafficPolicy": nil, "allocateLoadBalancerNodePorts": nil, "healthCheckNodePort": nil,
		},
	}, "park " + id + " as ClusterIP"
}

// Wake makes a Service still ClusterIP a LoadBalancer again with the
// fields its record holds (node ports allocated anew, the cloud's address
// perhaps another); one whose type changed since is left as it is.
func (parkLB) Wake(id string, w *unstructured.Unstructured) (map[string]any, string, error) {
	recorded, ok := w.GetAnnotations()[status.LoadBalancerAnnotation]
	if !ok {
		return nil, "", nil
	}
	var rec lbRecord
	if err := json.Unmarshal([]byte(recorded), &rec); err != nil || rec.Type != typeLoadBalancer {
		return nil, "", fmt.Errorf("%s: annotation %s=%q is not a LoadBalancer's record", id, status.LoadBalancerAnnotation, recorded)
	}
	drop := dropRecord(status.LoadBalancerAnnotation)
	if now := lbSpec(w).Type; now != typeClusterIP {
		return map[string]any{"metadata": drop}, fmt.Sprintf("leave %s of type %s: changed since nsman parked it; drop its record", id, now), nil
	}
	spec := map[string]any{"type": rec.Type}
	set := func(key string, v any, ok bool) {
		if ok {
			spec[key] = v
		}
	}
	set("loadBalancerClass", rec.LoadBalancerClass, rec.LoadBalancerClass != nil)
	set("loadBalancerIP", rec.LoadBalancerIP, rec.LoadBalancerIP != "")
	set("loadBalancerSourceRanges", rec.LoadBalancerSourceRanges, len(rec.LoadBalancerSourceRanges) > 0)
	set("externalTrafficPolicy", rec.ExternalTrafficPolicy, rec.ExternalTrafficPolicy != "")
	set("allocateLoadBalancerNodePorts", rec.AllocateLoadBalancerNodePorts, rec.AllocateLoadBalancerNodePorts != nil)
	return map[string]any{"metadata": drop, "spec": spec}, "unpark " + id + " as LoadBalancer", nil
}

// Awake: of type LoadBalancer.
func (parkLB) Awake(spec *Spec, _ map[string]string) bool { return spec.Type == typeLoadBalancer }

// Above: only a sleep with load balancers parks one.
func (parkLB) Above(_ *Spec, to policy.SleepTo) bool { return to.LoadBalancers }

func (parkLB) Record() string        { return status.LoadBalancerAnnotation }
func (parkLB) AwakeField() []string  { return typeField }
func (parkLB) Annotations() []string { return []string{status.LoadBalancerAnnotation} }
func (parkLB) Verb() string          { return "park" }
func (parkLB) FreesPods() bool       { return false }

// FreesLoadBalancer: a parked Service holds no cloud load balancer.
func (parkLB) FreesLoadBalancer() bool { return true }

// RecordBytes: its record holds source ranges.
func (parkLB) RecordBytes() int { return maxLoadBalancerRecord }

func (parkLB) Doc() Doc {
	return Doc{
		Kinds:  "Service of type LoadBalancer, with `loadBalancers: true` alone",
		Asleep: "`spec.type: ClusterIP` (its node ports dropped)",
		Record: "`" + status.LoadBalancerAnnotation + "`: its type, `loadBalancerClass`, `loadBalancerIP`, `loadBalancerSourceRanges`, `externalTrafficPolicy`, `allocateLoadBalancerNodePorts`, as JSON",
		Woken:  "a LoadBalancer again with those fields, new node ports, and the address the cloud hands out; one whose type changed since is left as it is",
	}
}

// lbSpec is what parkLB reads of w's spec.
func lbSpec(w *unstructured.Unstructured) Spec {
	var spec Spec
	if raw, ok := w.Object["spec"].(map[string]any); ok {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &spec)
	}
	return spec
}
