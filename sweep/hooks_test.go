package sweep

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/execute"
	"github.com/nsman/nsman/internal/record"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// priorRecord is a record that says prior as listed, and nothing else.
type priorRecord struct {
	record.Record
	prior status.Prior
}

func (r priorRecord) Prior() status.Prior { return r.prior }

// hookOf is manager namespace/name's decision to deliver its policy
// "report", whose last delivery was deferred when deferred.
func hookOf(namespace, name string, deferred bool) hookJob {
	var prior status.Prior
	if deferred {
		prior.Last = &status.LastAction{Policy: "report", Action: policy.ActionWebhook, Result: report.ResultFailed, Deferred: true}
	}
	return hookJob{
		rec: priorRecord{prior: prior},
		d: decide.Decision{Manager: policy.Manager{Namespace: namespace, Name: name},
			Plan: &decide.Plan{Step: decide.StepAct, Policy: policy.Policy{Name: "report", Action: policy.Action{Type: policy.ActionWebhook}}}},
	}
}

func newHookQueue(at time.Time) *hookQueue {
	h := &hookQueue{offset: execute.Rotation(at)}
	h.ready = sync.NewCond(&h.mu)
	return h
}

// drain takes every job of h, closed.
func drain(h *hookQueue) []hookJob {
	h.close()
	var out []hookJob
	for j, ok := h.take(); ok; j, ok = h.take() {
		out = append(out, j)
	}
	return out
}

// The webhook workers take the queued deliveries by namespace from a point
// that moves each minute: over consecutive sweeps, every namespace's comes
// among the first that a sweep's workers take, and no sweep starts where
// the one before did; a namespace's own go as queued.
func TestHookQueueRotatesAcrossNamespaces(t *testing.T) {
	const (
		namespaces = 20
		workers    = 4
		sweeps     = 20
	)
	at := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	head := map[string]int{}
	previous := ""
	for i := range sweeps {
		h := newHookQueue(at.Add(time.Duration(i) * time.Minute))
		for n := range namespaces {
			ns := fmt.Sprintf("team-%02d", n)
			h.put(hookOf(ns, "a", false))
			h.put(hookOf(ns, "b", false))
		}
		jobs := drain(h)
		if len(jobs) != 2*namespaces {
			t.Fatalf("sweep %d: took %d jobs, want %d", i, len(jobs), 2*namespaces)
		}
		for k := 0; k < len(jobs); k += 2 {
			if a, b := jobs[k].d.Manager, jobs[k+1].d.Manager; a.Namespace != b.Namespace || a.Name != "a" || b.Name != "b" {
				t.Fatalf("sweep %d: %s/%s then %s/%s, want a namespace's deliveries together, as queued", i, a.Namespace, a.Name, b.Namespace, b.Name)
			}
		}
		first := jobs[0].d.Manager.Namespace
		if first == previous {
			t.Errorf("sweep %d starts with %s, as the one before", i, first)
		}
		previous = first
		for k := 0; k < 2*workers; k += 2 {
			head[jobs[k].d.Manager.Namespace]++
		}
	}
	t.Logf("among the first %d, by namespace: %v", workers, head)
	if len(head) != namespaces {
		t.Errorf("in %d sweeps, %d of %d namespaces came among the first %d: %v", sweeps, len(head), namespaces, workers, head)
	}
	for ns, n := range head {
		// 20 sweeps × 4 places / 20 namespaces: 4 each, if even.
		if n > 3*sweeps*workers/namespaces {
			t.Errorf("%s came among the first %d in %d of %d sweeps", ns, workers, n, sweeps)
		}
	}
}

// A delivery deferred in its last sweep goes before those that were not,
// whatever its namespace's place.
func TestHookQueueTakesDeferredFirst(t *testing.T) {
	h := newHookQueue(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC))
	for n := range 10 {
		h.put(hookOf(fmt.Sprintf("team-%02d", n), "a", false))
	}
	h.put(hookOf("team-late", "a", true))
	h.put(hookOf("team-later", "a", true))
	jobs := drain(h)
	for i, j := range jobs[:2] {
		if !j.first {
			t.Errorf("job %d is %s's, want a deferred one first", i, j.d.Manager.Namespace)
		}
	}
	for _, j := range jobs[2:] {
		if j.first {
			t.Errorf("%s's deferred delivery is after another", j.d.Manager.Namespace)
		}
	}
}
