package workload

import "slices"

// known are the kinds nsman reads and writes without discovery, each
// registered once, in policy.KnownKinds' order: the order a sweep lists
// them in.
var known = []Known{deployment, statefulSet, cronJob, scaledObject}

// granted are the kinds found by discovery that the shipped ClusterRole
// grants, after the known ones.
var granted = []Grant{argoRollouts}

// Scale is the way of a kind discovery finds with a scale subresource.
var Scale = Replicas

// Kinds are the known kinds, in their order.
func Kinds() []Known { return slices.Clone(known) }

// Lookup is the known kind named name (as policy.KnownKinds spells it),
// and whether there is one.
func Lookup(name string) (Known, bool) {
	i := slices.IndexFunc(known, func(k Known) bool { return k.Name == name })
	if i < 0 {
		return Known{}, false
	}
	return known[i], true
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
	for _, w := range append(ways(), Scale) {
		for _, a := range w.Annotations() {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

// ways are the known kinds' ways.
func ways() []Way {
	out := make([]Way, len(known))
	for i, k := range known {
		out[i] = k.Way
	}
	return out
}

// dropRecord is the metadata of a patch that removes annotation key.
func dropRecord(key string) map[string]any {
	return map[string]any{"annotations": map[string]any{key: nil}}
}
