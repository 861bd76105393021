package probe

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/cluster/clustertest"
	"github.com/nsman/nsman/report"
)

func TestStuckReasons(t *testing.T) {
	cond := func(typ corev1.NamespaceConditionType, status corev1.ConditionStatus, msg string) corev1.NamespaceCondition {
		return corev1.NamespaceCondition{Type: typ, Status: status, Message: msg}
	}
	failing := []string{"APIService v1.metrics.example (metrics.example/v1) is unavailable: the server is currently unable to handle the request"}
	tests := []struct {
		name  string
		ns    corev1.Namespace
		none  bool // discovery fails on nothing now
		want  []string
		words []string
	}{
		{
			name: "an APIService down",
			ns: corev1.Namespace{Status: corev1.NamespaceStatus{Conditions: []corev1.NamespaceCondition{
				cond(corev1.NamespaceDeletionDiscoveryFailure, corev1.ConditionTrue, "Discovery failed for some groups, 1 failing: ..."),
				cond(corev1.NamespaceContentRemaining, corev1.ConditionFalse, "All content successfully removed"),
			}}},
			want:  []string{report.StuckDiscoveryFailure},
			words: []string{"APIService v1.metrics.example", "finishes deleting no namespace of the cluster until"},
		},
		{
			name: "discovery failed, but works now",
			ns: corev1.Namespace{Status: corev1.NamespaceStatus{Conditions: []corev1.NamespaceCondition{
				cond(corev1.NamespaceDeletionDiscoveryFailure, corev1.ConditionTrue, "Discovery failed for some groups, 1 failing: x/v1"),
			}}},
			none:  true,
			want:  []string{report.StuckDiscoveryFailure},
			words: []string{"Discovery failed for some groups, 1 failing: x/v1"},
		},
		{
			name: "a finalizer nobody removes",
			ns: corev1.Namespace{Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}}, Status: corev1.NamespaceStatus{Conditions: []corev1.NamespaceCondition{
				cond(corev1.NamespaceContentRemaining, corev1.ConditionTrue, "Some resources are remaining: widgets.example.com has 2 resource instances"),
				cond(corev1.NamespaceFinalizersRemaining, corev1.ConditionTrue, "Some content in the namespace has finalizers remaining: example.com/hold in 2 resource instances"),
			}}},
			want:  []string{report.StuckFinalizersRemaining, report.StuckContentRemaining},
			words: []string{"example.com/hold in 2 resource instances", "named by its prefix", "widgets.example.com has 2"},
		},
		{
			name: "content that failed to go",
			ns: corev1.Namespace{Status: corev1.NamespaceStatus{Conditions: []corev1.NamespaceCondition{
				cond(corev1.NamespaceDeletionContentFailure, corev1.ConditionTrue, "Failed to delete all resource types, 1 remaining: forbidden"),
				cond(corev1.NamespaceDeletionGVParsingFailure, corev1.ConditionTrue, "bad group version"),
			}}},
			want:  []string{report.StuckGroupVersionParsingFailure, report.StuckContentFailure},
			words: []string{"forbidden", "bad group version"},
		},
		{
			name: "finalizers of its own",
			ns: corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Finalizers: []string{"example.com/meta"}},
				Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes, "example.com/spec"}}},
			want:  []string{report.StuckNamespaceFinalizers},
			words: []string{"spec.finalizers example.com/spec, metadata.finalizers example.com/meta"},
		},
		{
			name:  "nothing said",
			ns:    corev1.Namespace{Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}}},
			want:  []string{report.StuckUnknown},
			words: []string{"kube-controller-manager"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asked := 0
			reasons := stuckReasons(&tt.ns, func() []string {
				asked++
				if tt.none {
					return nil
				}
				return failing
			})
			var got []string
			var all strings.Builder
			for _, r := range reasons {
				got = append(got, r.Reason)
				all.WriteString(r.Message + "\n")
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("reasons %v, want %v", got, tt.want)
			}
			for _, w := range tt.words {
				if !strings.Contains(all.String(), w) {
					t.Errorf("messages %q lack %q", all.String(), w)
				}
			}
			if discovery := tt.want[0] == report.StuckDiscoveryFailure; (asked > 0) != discovery {
				t.Errorf("discovery asked %d times; want it asked only for a discovery failure", asked)
			}
		})
	}
}

// Past stuckIndexAfter stuck namespaces, a sweep reads the rest from one
// list of every namespace, and says the same of each.
func TestStuckNamespacesReadOnceWhenMany(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	deleted := metav1.NewTime(now.Add(-time.Hour))
	client := kubefake.NewClientset()
	var infos []cluster.Namespace
	for i := range stuckIndexAfter + 8 {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns-%02d", i), UID: types.UID(fmt.Sprint("uid-", i)), DeletionTimestamp: &deleted,
			Annotations: map[string]string{"example.com/blob": strings.Repeat("x", 64<<10)}},
			Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"example.com/own"}}}
		if err := client.Tracker().Add(n); err != nil {
			t.Fatal(err)
		}
		infos = append(infos, cluster.Namespace{Name: n.Name, UID: n.UID, Terminating: true, Deleting: deleted.Time})
	}
	byName, all := 0, 0
	// The fake selects by labels alone: the field selector by name is
	// applied here, as the API server would.
	client.PrependReactor("list", "namespaces", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sel := a.(k8stesting.ListAction).GetListRestrictions().Fields
		if sel.Empty() {
			all++
			return false, nil, nil
		}
		byName++
		name, _ := sel.RequiresExactMatch("metadata.name")
		obj, err := client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("namespaces"), "", name)
		if err != nil {
			return true, &corev1.NamespaceList{}, nil
		}
		return true, &corev1.NamespaceList{Items: []corev1.Namespace{*obj.(*corev1.Namespace)}}, nil
	})
	reads := testReads(cluster.Clients{Kube: clustertest.CoreListsOverHTTP(t, client)}, defaultClaimTTL, nil)
	x := NewStuck(reads, defaultStuckAfter)
	for _, ns := range infos {
		st, err := x.Of(t.Context(), ns, now)
		if err != nil || st == nil || st.Cause() != report.StuckNamespaceFinalizers || !st.Since.Equal(deleted.UTC()) {
			t.Fatalf("%s: %+v, %v; want it stuck on its own finalizer", ns.Name, st, err)
		}
	}
	if byName != stuckIndexAfter || all != 1 {
		t.Errorf("%d reads by name and %d lists of every namespace; want %d and 1", byName, all, stuckIndexAfter)
	}
	// The list keeps of each namespace what says why it is stuck, not its
	// annotations.
	for name, n := range x.index {
		if len(n.Annotations) > 0 || n.Spec.Finalizers == nil {
			t.Errorf("%s kept with %d annotations and finalizers %v; want none and its finalizers", name, len(n.Annotations), n.Spec.Finalizers)
		}
	}
	if st, err := NewStuck(reads, defaultStuckAfter).Of(t.Context(), cluster.Namespace{Name: "ns-00", UID: "another", Terminating: true, Deleting: deleted.Time}, now); st != nil || err != nil {
		t.Errorf("a namespace recreated under the name: %+v, %v; want it not told stuck", st, err)
	}
}
