package status

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
)

// TestLastWritten: a record's latest time is that of its claim, last
// action, minChecks progress or stages, whichever is latest.
func TestLastWritten(t *testing.T) {
	at := func(minutes int) time.Time { return time.Date(2026, 1, 1, 0, minutes, 0, 0, time.UTC) }
	for _, tt := range []struct {
		name string
		st   PairStatus
		want time.Time
	}{
		{"claim", PairStatus{Progress: Progress{Claim: &Claim{Expires: at(5)}, LastAction: &LastAction{Time: at(1)}}}, at(5)},
		{"last action", PairStatus{Progress: Progress{LastAction: &LastAction{Time: at(7)}, Fired: []FiredPolicy{{Time: at(3)}}}}, at(7)},
		{"progress", PairStatus{Progress: Progress{Checks: map[string]policy.CheckState{"a": {Last: at(2)}, "b": {Last: at(9)}}}}, at(9)},
		{"stage", PairStatus{Progress: Progress{Fired: []FiredPolicy{{Time: at(4)}, {Time: at(8)}}}}, at(8)},
		{"written", PairStatus{Rule: "ns/rule", Progress: Progress{IgnoredHold: "unparseable"}, Written: ptr.To(at(6))}, at(6)},
		{"nothing", PairStatus{Rule: "ns/rule"}, time.Time{}},
	} {
		raw, _ := json.Marshal(tt.st)
		if got := DecodePair(string(raw)).LastTime(); !got.Equal(tt.want) {
			t.Errorf("%s: lastTime = %v, want %v", tt.name, got, tt.want)
		}
	}
	if got := DecodePair("{not json").LastTime(); !got.IsZero() {
		t.Errorf("a record that does not decode: lastTime = %v, want the zero time", got)
	}
}

// TestPairAnnotationHidesTheRuleUID: the key of a rule's record, which
// whoever reads the namespace sees, is a valid annotation key that does
// not hold the rule's UID, one per rule.
func TestPairAnnotationHidesTheRuleUID(t *testing.T) {
	a, b := types.UID("0b6f2c1e-5d0a-4b8e-9a61-7e3f1c2d4a5b"), types.UID("0b6f2c1e-5d0a-4b8e-9a61-7e3f1c2d4a5c")
	key := PairAnnotation(a)
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		t.Errorf("%s is no annotation key: %v", key, errs)
	}
	if !strings.HasPrefix(key, PairAnnotationPrefix) {
		t.Errorf("%s does not begin with %s", key, PairAnnotationPrefix)
	}
	for _, part := range strings.Split(string(a), "-") {
		if strings.Contains(key, part) {
			t.Errorf("%s holds %q, a part of the rule's UID %s", key, part, a)
		}
	}
	// What docs/rules.md tells to compute it with: printf 'record/%s' UID
	// | sha256sum | cut -c1-32.
	sum := sha256.Sum256([]byte("record/" + string(a)))
	if want := PairAnnotationPrefix + hex.EncodeToString(sum[:])[:32]; key != want {
		t.Errorf("PairAnnotation(%s) = %s, want %s as docs/rules.md computes it", a, key, want)
	}
	if key != PairAnnotation(a) || key == PairAnnotation(b) {
		t.Errorf("PairAnnotation(%s) = %s, PairAnnotation(%s) = %s: want one key per rule, always the same", a, key, b, PairAnnotation(b))
	}
}

func TestObserveKeepsTransitionTimeWhileUnchanged(t *testing.T) {
	t1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var st Status
	st.Observe(report.Entry{State: report.StateWaiting, Target: "ns", Message: "waiting"}, 1, t1)
	st.Observe(report.Entry{State: report.StateFailed, Target: "ns", Message: "failed once"}, 1, t1.Add(time.Minute))
	c := st.Conditions[0]
	if c.Type != ConditionFired || c.Status != metav1.ConditionFalse || c.Reason != "Failed" || !c.LastTransitionTime.Time.Equal(t1) {
		t.Fatalf("condition %+v: want False/Failed since %v", c, t1)
	}
	t3 := t1.Add(2 * time.Minute)
	st.Observe(report.Entry{State: report.StateFired, Target: "ns", Message: "done"}, 2, t3)
	c = st.Conditions[0]
	if len(st.Conditions) != 1 || c.Status != metav1.ConditionTrue || c.Reason != "Fired" || !c.LastTransitionTime.Time.Equal(t3) || c.ObservedGeneration != 2 {
		t.Fatalf("conditions %+v: want one True/Fired since %v", st.Conditions, t3)
	}
	if st.State != report.StateFired || st.ObservedGeneration != 2 || st.NextDue != nil {
		t.Errorf("status %+v", st)
	}
}

func TestTruncateKeepsRunesWhole(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abcdefghij", 8, "abcde..."},
		{"ééééé", 8, "éé..."}, // 10 bytes; a cut at 5 would split the third é
		{"日本語のテキスト", 10, "日本..."},
	} {
		got := Truncate(tc.in, tc.n)
		if got != tc.want || !utf8.ValidString(got) || len(got) > tc.n {
			t.Errorf("truncate(%q, %d) = %q, want %q (valid UTF-8, at most %d bytes)", tc.in, tc.n, got, tc.want, tc.n)
		}
	}
}

// A claim holds from when it is made until it expires, and only while its
// expiry lies no further ahead than a sweep with the same --claim-ttl could
// have set it, give or take ClaimSkew.
func TestClaimLive(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	const ttl = time.Minute
	for _, tt := range []struct {
		name    string
		expires time.Time
		want    bool
	}{
		{"expired", now.Add(-time.Second), false},
		{"expiring now", now, false},
		{"just made", now.Add(ttl), true},
		{"within the skew", now.Add(ttl + ClaimSkew), true},
		{"beyond the skew", now.Add(ttl + ClaimSkew + time.Second), false},
		{"an hour ahead", now.Add(time.Hour), false},
		{"years ahead", now.AddDate(10, 0, 0), false},
	} {
		if got := (&Claim{Expires: tt.expires}).Live(now, ttl); got != tt.want {
			t.Errorf("%s: live = %t, want %t", tt.name, got, tt.want)
		}
	}
	var none *Claim
	if none.Live(now, ttl) {
		t.Error("no claim is live")
	}
}
