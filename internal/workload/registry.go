package workload

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nsman/nsman/policy/patch"
)

// known are the kinds nsman reads and writes without discovery, each
// registered once, in policy.KnownKinds' order: the order a sweep lists
// them in.
var known = []Known{deployment, statefulSet, cronJob, scaledObject}

// parked are the kinds a sleep's parameter adds to what sleeps, whatever
// the selectors pick (Known.Parks), after the known ones: no selector names
// them, and none runs a pod.
var parked = []Known{loadBalancer}

// granted are the kinds found by discovery that the shipped ClusterRole
// grants, after the known ones.
var granted = []Grant{argoRollouts}

// Scale is the way of a kind discovery finds with a scale subresource.
var Scale = Replicas

// Kinds are the known kinds, in their order.
func Kinds() []Known { return slices.Clone(known) }

// Parked are the parked kinds, in their order.
func Parked() []Known { return slices.Clone(parked) }

// ParkPermissions are what the parked kinds need: to list and patch each.
// They are apart from Permissions, whose resources are a workload kind's
// alone (internal/layout keeps them home); a parked kind's resource is
// read elsewhere too (what a DELETE reclaims).
func ParkPermissions() []Permission {
	var out []Permission
	for _, k := range parked {
		out = append(out, Permission{"list", k.Resource.Group, k.Resource.Resource, k.Why}, Permission{"patch", k.Resource.Group, k.Resource.Resource, k.Why})
	}
	return out
}

// AnnotationBytes bounds the value of annotation key where a workload is
// read: a way's record that may be long (RecordBytes) is kept to its
// bound, any other annotation to otherwise.
func AnnotationBytes(key string, otherwise int) int {
	for _, w := range ways() {
		if long, ok := w.(interface{ RecordBytes() int }); ok && w.Record() == key {
			return long.RecordBytes()
		}
	}
	return otherwise
}

// Permissions are what the registered kinds need: to list and patch each
// (a workload that changed meanwhile is read again with a list by name).
func Permissions() []Permission {
	var out []Permission
	for _, k := range known {
		out = append(out, Permission{"list", k.Resource.Group, k.Resource.Resource, k.Why}, Permission{"patch", k.Resource.Group, k.Resource.Resource, k.Why})
	}
	for _, g := range granted {
		out = append(out, Permission{"list", g.Group, g.Resource, g.Why}, Permission{"patch", g.Group, g.Resource, g.Why})
	}
	return out
}

// Annotations are the annotations every way's sleep and wake read, once
// each.
func Annotations() []string {
	var out []string
	for _, w := range ways() {
		for _, a := range w.Annotations() {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

// ways are the registered ways, once each: Scale's, then the known
// kinds', then the parked kinds', in their order, then a patch's.
func ways() []Way {
	out := []Way{Scale}
	for _, k := range slices.Concat(known, parked) {
		if !slices.Contains(out, k.Way) {
			out = append(out, k.Way)
		}
	}
	return append(out, Patched(patch.Patch{}))
}

// Table is docs/sleep.md's table of kinds: a row per way.
func Table() string {
	var b strings.Builder
	b.WriteString("| kind | asleep | its record (on the workload) | woken |\n| --- | --- | --- | --- |\n")
	for _, w := range ways() {
		d := w.Doc()
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", d.Kinds, d.Asleep, d.Record, d.Woken)
	}
	return b.String()
}

// dropRecord is the metadata of a patch that removes annotation key.
func dropRecord(key string) map[string]any {
	return map[string]any{"annotations": map[string]any{key: nil}}
}
