package webhook

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// silentReceivers starts n receivers that never answer, and counts the
// requests they get.
func silentReceivers(t *testing.T, n int) ([]string, *atomic.Int64) {
	t.Helper()
	release := make(chan struct{})
	var hits atomic.Int64
	hold := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		hits.Add(1)
		select {
		case <-release:
		case <-time.After(5 * time.Second):
		}
	})
	var urls []string
	for range n {
		urls = append(urls, startReceiver(t, hold).URL)
	}
	t.Cleanup(func() { close(release) }) // before the receivers close
	return urls, &hits
}

// Once tenants' deliveries that ended silent took 2 × Timeout × Workers,
// every later delivery of any tenant is deferred, whatever its receiver,
// and says why; the platform's are not.
func TestSilentTimeDefersTenantsOnceSpent(t *testing.T) {
	const timeout = 100 * time.Millisecond
	silent, hits := silentReceivers(t, 3)
	other, delivered := hitCounter(t)
	s := NewSender(testOptions(func(o *Options) {
		o.Timeout, o.MaxAttempts, o.Allow, o.Workers = timeout, 3, mustAllow(t, "127.0.0.1"), 1
	}))
	// Each of its own namespace: no scope spends its silent receivers.
	for i, u := range silent[:2] {
		if d, err := s.Deliver(t.Context(), Route{Tenant: true, Scope: fmt.Sprint("team-", i)}, u, []byte("{}"), "k"); Deferred(err) || Summary(d, err) != "timed out" {
			t.Fatalf("receiver %d: %+v, %q; want it timed out", i, d, Summary(d, err))
		}
	}
	before := hits.Load()
	for _, u := range []string{silent[2], other.URL} {
		d, err := s.Deliver(t.Context(), Route{Tenant: true, Scope: "team-c"}, u, []byte("{}"), "k")
		if !errors.Is(err, errBudgetSpent) || d.Attempts != 0 || Summary(d, err) != errBudgetSpent.Error() {
			t.Errorf("a tenant's delivery after 2 timeouts of 1 worker: %+v, %q; want deferred for the sweep's time", d, Summary(d, err))
		}
		if err := s.Silent("team-c", u); !errors.Is(err, errBudgetSpent) {
			t.Errorf("Silent(team-c) = %v, want deferred for the sweep's time", err)
		}
	}
	if hits.Load() != before || delivered.Load() != 0 {
		t.Errorf("%d requests after the time was spent, want none", hits.Load()-before+delivered.Load())
	}
	if _, err := s.Send(t.Context(), other.URL, []byte("{}"), "k"); err != nil || delivered.Load() != 1 {
		t.Errorf("the platform's delivery: %v, want it delivered", err)
	}
}

// However many tenants' deliveries go to receivers that never answer, each
// its own, W workers make fewer than 3 × W attempts: one each (a timeout
// ends a delivery) while less than 2 × Timeout × W was spent, plus those
// under way when it was.
func TestSilentTimeIsBounded(t *testing.T) {
	const (
		timeout    = 100 * time.Millisecond
		workers    = 4
		namespaces = 40
	)
	silent, hits := silentReceivers(t, namespaces)
	s := NewSender(testOptions(func(o *Options) {
		o.Timeout, o.MaxAttempts, o.Allow, o.Workers = timeout, 3, mustAllow(t, "127.0.0.1"), workers
	}))
	jobs := make(chan int, namespaces)
	for i := range namespaces {
		jobs <- i
	}
	close(jobs)
	var (
		mu        sync.Mutex
		attempted int
		held      time.Duration
		deferred  int
	)
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				d, err := s.Deliver(t.Context(), Route{Tenant: true, Scope: fmt.Sprint("ns-", i)}, silent[i], []byte("{}"), "k")
				mu.Lock()
				switch {
				case Deferred(err) && d.Attempts == 0:
					deferred++
				case Summary(d, err) == "timed out":
					attempted++
					held += d.Duration
				default:
					t.Errorf("delivery %d: %+v, %q; want one attempt timed out, or deferred", i, d, Summary(d, err))
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	t.Logf("%d attempted, holding the workers %s in all; %d deferred; %s", attempted, held, deferred, took)
	if attempted >= 3*workers || hits.Load() != int64(attempted) {
		t.Errorf("%d deliveries attempted with %d requests: want fewer than %d, one request each", attempted, hits.Load(), 3*workers)
	}
	if attempted+deferred != namespaces {
		t.Errorf("%d attempted and %d deferred of %d", attempted, deferred, namespaces)
	}
	// Without the bound: 40 timeouts over 4 workers, 10 in a row each.
	if took >= namespaces/workers*timeout {
		t.Errorf("the deliveries took %s, want less than %s", took, namespaces/workers*timeout)
	}
}
