package workload

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nsman/nsman/policy"
)

// Way is how a kind of workload sleeps and wakes. Each of its patches is
// one merge patch that changes the workload and its record (an annotation
// of the state the sleep undid) together, so that no write leaves the one
// without the other.
type Way interface {
	// Sleep returns the patch that puts w to sleep as to says (what of it
	// applies to the kind) and the effect; a nil patch when w sleeps
	// already, or to does not put it to sleep (it is then not written to,
	// and keeps any record; an effect says why when it is left awake).
	// id names w in the effect.
	Sleep(id string, w *unstructured.Unstructured, to policy.SleepTo) (map[string]any, string)
	// Wake returns the patch that brings back what w's record says, and
	// the effect; a nil patch when w has no record. A workload changed by
	// someone else since the sleep keeps its state and loses the record:
	// kept, it would bring an old state back at a later wake.
	Wake(id string, w *unstructured.Unstructured) (map[string]any, string, error)
	// Awake reports whether a workload whose spec and annotations, as
	// listed, are these is awake: what its sleep to the zero
	// policy.SleepTo, the deepest, would change. Its sleep to another
	// changes it when it is Awake and Above that.
	Awake(spec *Spec, annotations map[string]string) bool
	// Above reports whether a workload Awake calls awake is above what a
	// sleep to to leaves it at (a kind without replicas always is): a
	// sweep's index of workloads awake, kept for every policy, is asked
	// so for each policy's.
	Above(spec *Spec, to policy.SleepTo) bool
	// Record is the annotation of a sleep's record: a workload awake
	// that carries it was woken by someone since.
	Record() string
	// AwakeField is the path, in fieldsV1 keys, of the field that keeps
	// a workload awake: the field manager that set it last woke it. The
	// caller does not change it.
	AwakeField() []string
	// Annotations are the annotations its sleep and wake read (its
	// record, and the state held in an annotation), each bounded in bytes
	// where a workload is read.
	Annotations() []string
	// Verb is what its sleep does, in errors: scale, suspend, pause.
	Verb() string
	// FreesPods reports whether its sleep scales its pods to zero, so
	// that what it frees is replicas × its pod template's requests.
	FreesPods() bool
	// FreesLoadBalancer reports whether its sleep frees a cloud load
	// balancer (report.Reclaimed's LoadBalancers).
	FreesLoadBalancer() bool
	// Doc is its row of docs/sleep.md's table of kinds (Table).
	Doc() Doc
}

// Doc is how docs/sleep.md tells a way, in Markdown: the kinds that sleep
// so, what asleep is, the record kept on the workload, and what a wake
// brings back.
type Doc struct {
	Kinds, Asleep, Record, Woken string
}

// Spec is what the ways read of a workload's spec, decoded no further: a
// list of tenants' workloads is decoded one object at a time into it. A
// way that reads another field of the spec adds it here.
type Spec struct {
	Replicas *int64 `json:"replicas,omitempty"`
	Suspend  *bool  `json:"suspend,omitempty"`
	// A Service's type and what its LoadBalancer needs back when parked
	// (see parkLB).
	Type                          string   `json:"type,omitempty"`
	LoadBalancerClass             *string  `json:"loadBalancerClass,omitempty"`
	LoadBalancerIP                string   `json:"loadBalancerIP,omitempty"`
	LoadBalancerSourceRanges      []string `json:"loadBalancerSourceRanges,omitempty"`
	ExternalTrafficPolicy         string   `json:"externalTrafficPolicy,omitempty"`
	AllocateLoadBalancerNodePorts *bool    `json:"allocateLoadBalancerNodePorts,omitempty"`
}

// Known is a kind nsman reads and writes without discovery, as registered.
type Known struct {
	// Name is the kind's name, one of policy.KnownKinds.
	Name     string
	Resource schema.GroupVersionResource
	Way      Way
	// Default: a SCALE_DOWN without selectors scales it, as the original
	// operator did.
	Default bool
	// Why it needs to list and patch the kind, as nsman doctor says it.
	Why string
	// Parks, for a parked kind (see Parked), says whether a sleep to a
	// SleepTo puts its objects to sleep: a parameter adds it to what
	// sleeps, whatever the selectors pick.
	Parks func(policy.SleepTo) bool
	// AwakeFields is a field selector the API server answers that lists
	// only the objects of the kind that may be awake; "" lists them all.
	AwakeFields string
}

// Grant is a kind found by discovery (a kind with a scale subresource)
// that the shipped ClusterRole grants nsman all the same.
type Grant struct {
	Group, Resource, Why string
}

// Permission is one verb on one resource that a registered kind needs,
// cluster-wide.
type Permission struct {
	Verb, Group, Resource, Why string
}
