package console

import (
	"io"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
)

// progressAfter is how long a run goes before a progress line shows: a
// short sweep prints none.
const progressAfter = 2 * time.Second

// Progress shows, on w when it is a terminal and show is set, a line that
// says what is under way, for how long, and status() ("sweeping, 12s:
// 3412 API requests"), once the run takes more than two seconds, redrawn
// every second in place. The returned stop clears the line and returns
// once nothing more is written, before the run's report prints.
func Progress(w io.Writer, show bool, what string, status func() string) (stop func()) {
	if !show || !IsTerminal(w) {
		return func() {}
	}
	return progress(w, what, status, progressAfter, time.Second)
}

// progress is Progress on any writer, after and every as given.
func progress(w io.Writer, what string, status func() string, after, every time.Duration) (stop func()) {
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		timer := time.NewTimer(after)
		defer timer.Stop()
		drawn := false
		for {
			select {
			case <-done:
				if drawn {
					_, _ = io.WriteString(w, clearLine)
				}
				return
			case <-timer.C:
				line := what + ", " + duration.HumanDuration(time.Since(start)) + ": " + status()
				_, _ = io.WriteString(w, clearLine+line)
				drawn = true
				timer.Reset(every)
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}
