package serve

import (
	"sync"
	"time"
)

// limiter lets a link write at most once per window: a flood of POSTs of
// one link (or a button pressed twice) writes once. It keeps at most max
// links, forgetting those whose window has passed when it is full, and
// refusing when none has: its memory is bounded whatever the flood.
type limiter struct {
	mu     sync.Mutex
	window time.Duration
	max    int
	last   map[string]time.Time
}

func newLimiter(window time.Duration, max int) *limiter {
	return &limiter{window: window, max: max, last: map[string]time.Time{}}
}

// allow reports whether link may write at now, and if so counts the write.
func (l *limiter) allow(link string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.last[link]; ok && now.Sub(t) < l.window {
		return false
	}
	if _, ok := l.last[link]; !ok && len(l.last) >= l.max {
		for k, t := range l.last {
			if now.Sub(t) >= l.window {
				delete(l.last, k)
			}
		}
		if len(l.last) >= l.max {
			return false
		}
	}
	l.last[link] = now
	return true
}

// forget lets link write again: its write did not happen.
func (l *limiter) forget(link string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.last, link)
}
