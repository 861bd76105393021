package cluster

import (
	"slices"

	"github.com/nsman/nsman/internal/owner"
	"github.com/nsman/nsman/internal/workload"
	"github.com/nsman/nsman/policy"
)

// Permission is one verb on one resource that a sweep uses, cluster-wide.
type Permission struct {
	Verb        string `json:"verb"`
	Group       string `json:"group"`
	Resource    string `json:"resource"`
	Subresource string `json:"subresource,omitempty"`
	// Why a sweep needs it, in a few words.
	Why string `json:"why"`
}

// String is the permission as a person reads it: verb, resource.group,
// and /subresource ("patch namespacemanagers.k8s.consol.de/status").
func (p Permission) String() string {
	s := p.Verb + " " + p.Resource
	if p.Group != "" {
		s += "." + p.Group
	}
	if p.Subresource != "" {
		s += "/" + p.Subresource
	}
	return s
}

// Permissions is every permission a sweep uses, and so what deploy/base's
// and the chart's ClusterRole grant (the RBAC integration test proves both
// ways).
var Permissions = slices.Concat([]Permission{
	{Verb: "list", Group: policy.Group, Resource: "namespacemanagers", Why: "list the managers"},
	{Verb: "patch", Group: policy.Group, Resource: "namespacemanagers", Why: "set spec.deactivated; under the original CRD, claims and status"},
	{Verb: "patch", Group: policy.Group, Resource: "namespacemanagers", Subresource: "status", Why: "claims and outcomes under nsman's CRD"},
	{Verb: "list", Resource: "namespaces", Why: "find the targets"},
	{Verb: "patch", Resource: "namespaces", Why: "a rule's record of a namespace"},
	{Verb: "delete", Resource: "namespaces", Why: "DELETE"},
	{Verb: "list", Resource: "pods", Why: "PODS_SUCCEED and PODS_FAILED; what a DELETE reclaims: CPU and memory; IDLE: pods created; a tenant's WEBHOOK to a Service: its Pods"},
	{Verb: "list", Resource: "persistentvolumeclaims", Why: "what a DELETE reclaims: storage"},
	{Verb: "list", Resource: "services", Why: "a tenant's WEBHOOK to a Service of its own namespace; what a DELETE reclaims: LoadBalancers"},
	{Verb: "list", Group: "discovery.k8s.io", Resource: "endpointslices", Why: "a tenant's WEBHOOK to a Service of its own namespace: the endpoints of its Pods"},
	{Verb: "list", Group: "batch", Resource: "jobs", Why: "PODS_SUCCEED and PODS_FAILED: Jobs that hold the check; IDLE: Jobs created"},
	{Verb: "create", Group: "events.k8s.io", Resource: "events", Why: "Events on managers"},
}, kindPermissions(), []Permission{
	{Verb: "list", Group: "apps", Resource: "replicasets", Why: "IDLE: ReplicaSets created (a Deployment rolled out)"},
	{Verb: "list", Group: "apps", Resource: "controllerrevisions", Why: "IDLE: ControllerRevisions created (a StatefulSet or DaemonSet rolled out)"},
}, ownerPermissions())

// kindPermissions are what the workload kinds nsman puts to sleep need,
// and the kinds a sleep parks, as internal/workload registers them.
func kindPermissions() []Permission {
	var out []Permission
	for _, p := range slices.Concat(workload.Permissions(), workload.ParkPermissions()) {
		out = append(out, Permission{Verb: p.Verb, Group: p.Group, Resource: p.Resource, Why: p.Why})
	}
	return out
}

// ownerPermissions are what reading the kinds that own namespaces needs,
// as internal/owner registers them.
func ownerPermissions() []Permission {
	var out []Permission
	for _, p := range owner.Permissions() {
		out = append(out, Permission{Verb: p.Verb, Group: p.Group, Resource: p.Resource, Why: p.Why})
	}
	return out
}

// OptionalPermissions are what a sweep uses only where the installation
// grants it, beyond Permissions: deleting the owners a DELETE via owner
// deletes through (chart value owners.deleteVia, or the kustomize component
// deploy/components/owner-delete). nsman doctor's ownerKinds says whether
// nsman has them; without them such a DELETE fails, naming the grant.
var OptionalPermissions = ownerDeletePermissions()

// ownerDeletePermissions are what deleting the owner kinds needs, as
// internal/owner registers them.
func ownerDeletePermissions() []Permission {
	var out []Permission
	for _, p := range owner.DeletePermissions() {
		out = append(out, Permission{Verb: p.Verb, Group: p.Group, Resource: p.Resource, Why: p.Why})
	}
	return out
}
