package cluster

import (
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"
)

// APIObserver wraps the transport to the API server. It keeps the server's
// clock, from the Date header of its responses, and counts requests by HTTP method.
// Install it with rest.Config.Wrap(o.Wrap).
type APIObserver struct {
	// local is the local clock; tests replace it.
	local func() time.Time

	mu       sync.Mutex
	offset   time.Duration
	seen     bool
	byMethod map[string]int
}

// NewAPIObserver returns an observer that reads the local clock through now
// (time.Now when nil).
func NewAPIObserver(now func() time.Time) *APIObserver {
	if now == nil {
		now = time.Now
	}
	return &APIObserver{local: now, byMethod: map[string]int{}}
}

// Wrap is a rest.Config.WrapTransport function.
func (o *APIObserver) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		o.count(req)
		resp, err := rt.RoundTrip(req)
		if err == nil {
			o.observeDate(resp.Header.Get("Date"))
		}
		return resp, err
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (o *APIObserver) count(req *http.Request) {
	o.mu.Lock()
	o.byMethod[strings.ToLower(req.Method)]++
	o.mu.Unlock()
}

// observeDate records the offset of the server's clock from the local one.
// Date has whole seconds and is truncated, so the offset never puts the
// server's time ahead of what it really is: nothing fires early.
func (o *APIObserver) observeDate(date string) {
	if date == "" {
		return
	}
	t, err := http.ParseTime(date)
	if err != nil {
		return
	}
	o.mu.Lock()
	o.offset = t.Sub(o.local())
	o.seen = true
	o.mu.Unlock()
}

// Now returns the API server's current time, and false when no response has
// told it yet.
func (o *APIObserver) Now() (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.local().Add(o.offset), o.seen
}

// Skew is how far the local clock is ahead of the server's.
func (o *APIObserver) Skew() time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	return -o.offset
}

// Requests returns the number of requests made so far, by lower-case HTTP
// method (a list is a get).
func (o *APIObserver) Requests() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.byMethod)
}
