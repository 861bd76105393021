package robust

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

// tally is the destructive actions nsman applied, by target namespace:
// namespace deletes, Deployment, CronJob, ScaledObject and Rollout patches
// that succeeded, as the audit log has nsman's requests, and webhooks as
// the receiver got them.
// Each patch of a workload is conditional on the version nsman read: one
// that lost a race was refused (409) and is not counted, so a conditional
// retry counts once. Over a span in which nsman only puts workloads to
// sleep (or scales them down), the workload patches count those; over
// one in which it only wakes them, the restores.
type tally struct {
	deletes, scales  map[string]int
	suspends         map[string]int
	pauses, rollouts map[string]int
	// services and releases are the patches of Services and Flux
	// HelmReleases, which a sleep with every parameter parks and
	// suspends (see seedParams).
	services, releases map[string]int
	deliveries         map[string]int
	// keys are the Idempotency-Keys of the webhooks for each namespace.
	keys map[string]map[string]bool
}

// countActions tallies reqs, nsman's audited requests over a test, and the
// deliveries of its receiver.
func countActions(t *testing.T, reqs []cluster.Request, deliveries []nsmantest.Delivery) tally {
	t.Helper()
	c := tally{deletes: map[string]int{}, scales: map[string]int{}, suspends: map[string]int{}, pauses: map[string]int{}, rollouts: map[string]int{},
		services: map[string]int{}, releases: map[string]int{}, deliveries: map[string]int{}, keys: map[string]map[string]bool{}}
	for _, r := range reqs {
		switch {
		case r.Verb == "delete" && r.Resource == "namespaces" && r.Code == 200:
			c.deletes[r.Name]++
		case r.Verb == "patch" && r.Resource == "deployments" && r.Code == 200:
			c.scales[r.Namespace]++
		case r.Verb == "patch" && r.Resource == "cronjobs" && r.Code == 200:
			c.suspends[r.Namespace]++
		case r.Verb == "patch" && r.Resource == "scaledobjects" && r.Code == 200:
			c.pauses[r.Namespace]++
		case r.Verb == "patch" && r.Resource == "rollouts" && r.Code == 200:
			c.rollouts[r.Namespace]++
		case r.Verb == "patch" && r.Resource == "services" && r.Code == 200:
			c.services[r.Namespace]++
		case r.Verb == "patch" && r.Resource == nsmantest.HelmReleaseResource.Resource && r.Code == 200:
			c.releases[r.Namespace]++
		}
	}
	for _, d := range deliveries {
		var body struct{ Namespace string }
		if err := json.Unmarshal(d.Body, &body); err != nil {
			t.Fatal(err)
		}
		c.deliveries[body.Namespace]++
		if c.keys[body.Namespace] == nil {
			c.keys[body.Namespace] = map[string]bool{}
		}
		c.keys[body.Namespace][d.Header.Get("Idempotency-Key")] = true
	}
	return c
}

// actions is the number of destructive requests and deliveries.
func (c tally) actions() int {
	n := 0
	for _, m := range []map[string]int{c.deletes, c.scales, c.suspends, c.pauses, c.rollouts, c.services, c.releases, c.deliveries} {
		for _, v := range m {
			n += v
		}
	}
	return n
}

// duplicates counts actions applied more than once: a namespace deleted,
// a Deployment scaled or a CronJob patched twice, a webhook sent under two
// Idempotency-Keys. When
// resent is false, where no sweep died and no answer was lost, a webhook
// delivered twice under the same key counts too; otherwise that is the
// re-send the specification asks for.
func (c tally) duplicates(resent bool) int {
	extra := func(n int) int { return max(n-1, 0) }
	dups := 0
	for _, n := range c.deletes {
		dups += extra(n)
	}
	for _, n := range c.scales {
		dups += extra(n)
	}
	for _, m := range []map[string]int{c.suspends, c.pauses, c.rollouts, c.services, c.releases} {
		for _, n := range m {
			dups += extra(n)
		}
	}
	for ns, keys := range c.keys {
		if resent {
			dups += extra(len(keys))
		} else {
			dups += extra(c.deliveries[ns])
		}
	}
	return dups
}

// patchedOnce is sleepPatches of a namespace whose workloads (see
// makeSleepers) were each patched once.
const patchedOnce = "Deployment 1, CronJob 1, ScaledObject 1, Rollout 1"

// sleepPatches says how many times each workload of makeSleepers in ns was
// patched.
func (c tally) sleepPatches(ns string) string {
	return fmt.Sprintf("Deployment %d, CronJob %d, ScaledObject %d, Rollout %d", c.scales[ns], c.suspends[ns], c.pauses[ns], c.rollouts[ns])
}

// extraPatches is how many more times than once the workloads of
// makeSleepers in ns were patched.
func (c tally) extraPatches(ns string) int {
	n := 0
	for _, m := range []map[string]int{c.scales, c.suspends, c.pauses, c.rollouts} {
		n += max(m[ns]-1, 0)
	}
	return n
}

// forget drops the workload patches in ns from the tally.
func (c tally) forget(ns string) {
	for _, m := range []map[string]int{c.scales, c.suspends, c.pauses, c.rollouts, c.services, c.releases} {
		delete(m, ns)
	}
}
