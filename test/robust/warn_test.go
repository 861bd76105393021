package robust

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/tell"
	"github.com/nsman/nsman/test/nsmantest"
)

// Warnings of issue 48 (policies[].warnBefore): managers, each over a
// namespace of its own, and a rule, in a trusted namespace, over
// namespaces of its own, whose DELETEs are due within their threshold from
// the first sweep on. A manager has two policies that warn: only the one
// due first is warned of, once (what happens next); the other, due ten
// minutes later, never is while the first has not acted. The sweeps send
// their notifications to a receiver of their own (--notify-url).

const (
	// warnFirst is the policy each subject is warned of, due in an hour;
	// warnLater the manager's second one, due ten minutes later.
	warnFirst, warnLater = "delete in an hour", "delete later"
	// warnThreshold is their warnBefore, as a record keeps it.
	warnThreshold = "2h0m0s"
)

// warnedPolicy is policy name, a DELETE due ttlSeconds after the target's
// creation, warning two hours before.
func warnedPolicy(name string, ttlSeconds int64) map[string]any {
	return map[string]any{
		"name":       name,
		"condition":  map[string]any{"type": "TTL", "params": map[string]any{"ttlSeconds": ttlSeconds}},
		"action":     map[string]any{"type": "DELETE"},
		"warnBefore": []any{"2h"},
	}
}

// warnedSubjects maps the namespace of each subject warned to the uid of
// the rule that warns it; "" for a manager over its own namespace.
type warnedSubjects map[string]types.UID

// seedWarned creates, labelled with labels, managers managers that warn
// (each over a namespace of its own, named after it) and rule ruleName in
// ruleHome over ruled namespaces of its own.
func seedWarned(t *testing.T, e *nsmantest.Env, labels map[string]any, managers, ruled int, ruleName string) warnedSubjects {
	t.Helper()
	ctx := t.Context()
	ensureRuleHome(t)
	w := warnedSubjects{}
	create := func(ns, name string, spec map[string]any) types.UID {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "k8s.consol.de/v1beta1", "kind": "NamespaceManager",
			"metadata": map[string]any{"namespace": ns, "name": name, "labels": labels},
			"spec":     spec,
		}}
		created, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return created.GetUID()
	}
	for range managers {
		ns := shared.Namespace(t)
		create(ns, ns, map[string]any{"policies": []any{warnedPolicy(warnFirst, 3600), warnedPolicy(warnLater, 4200)}})
		w[ns] = ""
	}
	var selected []string
	for range ruled {
		ns := shared.Namespace(t)
		if _, err := shared.Admin.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"labels":{"nsman.test/rule":%q}}}`, ruleName), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		selected = append(selected, ns)
	}
	uid := create(ruleHome, ruleName, map[string]any{
		"namespaceSelector": map[string]any{"matchLabels": map[string]any{"nsman.test/rule": ruleName}},
		"policies":          []any{warnedPolicy(warnFirst, 3600)},
	})
	for _, ns := range selected {
		w[ns] = uid
	}
	return w
}

// warnings are the dueSoon notifications recv got, by target.
func warnings(t *testing.T, recv *nsmantest.Receiver) map[string][]tell.Notification {
	t.Helper()
	got := map[string][]tell.Notification{}
	for _, d := range recv.Deliveries() {
		var n tell.Notification
		if err := json.Unmarshal(d.Body, &n); err != nil {
			t.Fatalf("notification %s: %v", d.Body, err)
		}
		if n.Event == tell.EventDueSoon {
			got[n.Target] = append(got[n.Target], n)
		}
	}
	return got
}

// check checks each subject of w once a sweep over it completed: its
// record says warnFirst was told at warnThreshold, and recv got for it one
// dueSoon notification of warnFirst for the due time recorded (at most one
// when exactly is false: a sweep killed between the record and the
// notification loses it); as many as earlier counted, when given: none
// after the record. It returns the count of each, and how many of them
// were more than one.
func (w warnedSubjects) check(t *testing.T, e *nsmantest.Env, recv *nsmantest.Receiver, exactly bool, earlier map[string]int) (told map[string]int, duplicates int) {
	t.Helper()
	got, told := warnings(t, recv), map[string]int{}
	for ns, uid := range w {
		told[ns] = len(got[ns])
		duplicates += max(len(got[ns])-1, 0)
		st, err := warnedProgress(t, e, ns, uid)
		rec := st.Warned
		if err != nil || rec == nil || rec.Policy != warnFirst || !slices.Contains(rec.Before, warnThreshold) {
			t.Errorf("subject %s (rule uid %q) not recorded as told of %q at %s: %+v (%v)", ns, uid, warnFirst, warnThreshold, rec, err)
			continue
		}
		for _, n := range got[ns] {
			if n.Policy != warnFirst || n.Due == nil || !n.Due.Equal(rec.Due) {
				t.Errorf("subject %s warned of %q due %v, want of %q due %s only", ns, n.Policy, n.Due, warnFirst, rec.Due)
			}
		}
		switch {
		case len(got[ns]) > 1 || exactly && len(got[ns]) != 1:
			t.Errorf("subject %s warned %d times, want once (exactly: %t)", ns, len(got[ns]), exactly)
		case earlier != nil && len(got[ns]) != earlier[ns]:
			t.Errorf("subject %s warned %d times, %d before: warned again after its record", ns, len(got[ns]), earlier[ns])
		}
	}
	return told, duplicates
}

// warnedProgress is the record of the subject warned in ns: its manager's
// status, or the record rule uid keeps on it.
func warnedProgress(t *testing.T, e *nsmantest.Env, ns string, uid types.UID) (status.Progress, error) {
	t.Helper()
	if uid == "" {
		return managerProgress(t, e, ns), nil
	}
	return pairProgress(t, ns, uid)
}
