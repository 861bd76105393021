package explain

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/report"
)

// A namespace came back after a rule's action only when the action
// removed a namespace of its name (a DELETE, not a SCALE_DOWN), succeeded,
// and did so before the namespace was made.
func TestRemovedBefore(t *testing.T) {
	before, after := created.Add(-time.Hour), created.Add(time.Minute)
	for _, tc := range []struct {
		name   string
		action status.PairAction
		want   bool
	}{
		{"a DELETE before it was made", status.PairAction{Namespace: "pr-12", Policy: "ttl", Action: "DELETE", Result: report.ResultSucceeded, Time: before}, true},
		{"a DELETE after it was made", status.PairAction{Namespace: "pr-12", Policy: "ttl", Action: "DELETE", Result: report.ResultSucceeded, Time: after}, false},
		{"a DELETE at the second it was made", status.PairAction{Namespace: "pr-12", Policy: "ttl", Action: "DELETE", Result: report.ResultSucceeded, Time: created}, false},
		{"a DELETE that failed", status.PairAction{Namespace: "pr-12", Policy: "ttl", Action: "DELETE", Result: report.ResultFailed, Time: before}, false},
		{"a SCALE_DOWN", status.PairAction{Namespace: "pr-12", Policy: "idle", Action: "SCALE_DOWN", Result: report.ResultSucceeded, Time: before}, false},
		{"a DELETE of another namespace", status.PairAction{Namespace: "pr-13", Policy: "ttl", Action: "DELETE", Result: report.ResultSucceeded, Time: before}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := removedBefore("team/previews", []status.PairAction{tc.action}, "pr-12", created)
			if (len(got) == 1) != tc.want {
				t.Fatalf("came back %+v, want %t", got, tc.want)
			}
			if tc.want && (got[0] != CameBack{Rule: "team/previews", Policy: "ttl", Action: "DELETE", Deleted: before}) {
				t.Errorf("came back %+v", got[0])
			}
		})
	}
}

// rule is a NamespaceManager rule namespace/name, as listed, whose status
// lists latest; with annotation, its record is where the original CRD
// keeps it.
func rule(t *testing.T, namespace, name string, annotation bool, latest ...status.PairAction) string {
	t.Helper()
	st, err := json.Marshal(status.Status{Rule: &status.RuleSummary{Matched: 1, Latest: latest}})
	if err != nil {
		t.Fatal(err)
	}
	meta := fmt.Sprintf(`"name":%q,"namespace":%q,"uid":"u-%s","resourceVersion":"1"`, name, namespace, name)
	if annotation {
		quoted, _ := json.Marshal(string(st))
		return fmt.Sprintf(`{"apiVersion":"k8s.consol.de/v1beta1","kind":"NamespaceManager","metadata":{%s,"annotations":{%q:%s}},"spec":{"namePatterns":["pr-*"]}}`, meta, status.StatusAnnotation, quoted)
	}
	return fmt.Sprintf(`{"apiVersion":"k8s.consol.de/v1beta1","kind":"NamespaceManager","metadata":{%s},"spec":{"namePatterns":["pr-*"]},"status":%s}`, meta, st)
}

// TestCameBack: explain lists the rules cluster-wide, in pages, and names
// each whose status (or status annotation) lists a DELETE of a namespace
// of this name before it was made, for an Active namespace too.
func TestCameBack(t *testing.T) {
	deleted := created.Add(-10 * time.Minute)
	del := status.PairAction{Namespace: "pr-12", Policy: "ttl", Action: "DELETE", Result: report.ResultSucceeded, Time: deleted}
	items := []string{
		rule(t, "team-a", "previews", false, del),
		rule(t, "team-b", "idle", false, status.PairAction{Namespace: "pr-12", Policy: "idle", Action: "SCALE_DOWN", Result: report.ResultSucceeded, Time: deleted}),
		rule(t, "team-c", "legacy", true, del),
	}
	for i := range 2 * pageSize {
		items = append(items, rule(t, "other", fmt.Sprintf("r-%d", i), false))
	}
	items = append(items, rule(t, "team-d", "last", false, del))
	f := newFakeCluster(namespace("pr-12", nil, nil))
	f.managers = servedManagers(items)
	r := f.explain(t, "pr-12")
	var rules []string
	for _, c := range r.CameBack {
		rules = append(rules, c.Rule)
		if c.Policy != "ttl" || c.Action != "DELETE" || !c.Deleted.Equal(deleted) {
			t.Errorf("came back %+v", c)
		}
	}
	if got := strings.Join(rules, " "); got != "team-a/previews team-c/legacy team-d/last" || len(r.Unlisted) != 0 {
		t.Fatalf("came back after %s (unlisted %+v)", got, r.Unlisted)
	}
}

// A caller who may not list NamespaceManagers cluster-wide is told so,
// and explain goes on; past maxListed it reads no more, and says so.
func TestCameBackUnlisted(t *testing.T) {
	f := newFakeCluster(namespace("pr-12", nil, nil))
	f.managers = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"namespacemanagers.k8s.consol.de is forbidden"}`)
	})
	r := f.explain(t, "pr-12")
	if len(r.Unlisted) != 1 || !strings.Contains(r.Unlisted[0].Error, "you may not list them cluster-wide") {
		t.Fatalf("unlisted %+v", r.Unlisted)
	}

	del := status.PairAction{Namespace: "pr-12", Policy: "ttl", Action: "DELETE", Result: report.ResultSucceeded, Time: created.Add(-time.Hour)}
	one := rule(t, "team-a", "previews", false, del)
	items := make([]string, maxListed+pageSize)
	for i := range items {
		items[i] = one
	}
	f.managers = servedManagers(items)
	r = f.explain(t, "pr-12")
	if len(r.Unlisted) != 1 || !strings.Contains(r.Unlisted[0].Error, fmt.Sprintf("more than %d", maxListed)) || len(r.CameBack) != maxListed {
		t.Fatalf("unlisted %+v, %d came back, want %d and the list said cut", r.Unlisted, len(r.CameBack), maxListed)
	}
}
