package links

import (
	"testing"
	"time"
)

// FuzzVerify holds Verify to its promise on any token: it never panics,
// and whatever it accepts is a link that key signed, unexpired, of a known
// action and a bounded duration, that signs back to an accepted token.
func FuzzVerify(f *testing.F) {
	f.Add(Sign(testKey, testLink()))
	f.Add(Sign(testKey, testLink(func(l *Link) { l.Action = Wake; l.Duration = 2 * time.Hour })))
	f.Add(alter(Sign(testKey, testLink()), func(l *Link) { l.Namespace = "production" }))
	f.Add("bnNtYW4tbGluay12MQ.AAAA")
	f.Add("")
	f.Fuzz(func(t *testing.T, token string) {
		l, err := Verify(testKey, token, t0)
		if err != nil {
			return
		}
		if l.Action != Extend && l.Action != Wake || l.Duration <= 0 || l.Duration > MaxDuration || !t0.Before(l.Expires) {
			t.Fatalf("Verify accepted %+v", l)
		}
		if _, err := Verify(testKey, Sign(testKey, l), t0); err != nil {
			t.Fatalf("the accepted link %+v, signed again, is refused: %v", l, err)
		}
		if _, err := Verify([]byte("another key"), token, t0); err == nil {
			t.Fatalf("a token that testKey signed verifies with another key")
		}
	})
}
