package probe

import (
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nsman/nsman/internal/cluster/clustertest"
	"github.com/nsman/nsman/policy"
)

func TestKindsResolve(t *testing.T) {
	tests := []struct {
		name      string
		selectors []policy.Selector
		want      []string // group/version/resource of each selection
		wantErr   string   // "" for none
	}{
		{name: "none: Deployments and StatefulSets", want: []string{"apps/v1/deployments", "apps/v1/statefulsets"}},
		{name: "known kinds", selectors: []policy.Selector{{Kind: policy.KindCronJob}, {Kind: policy.KindScaledObject, Labels: map[string]string{"a": "b"}}},
			want: []string{"batch/v1/cronjobs", "keda.sh/v1alpha1/scaledobjects"}},
		{name: "a kind found, in its preferred version", selectors: []policy.Selector{{Kind: "rollout"}}, want: []string{"argoproj.io/v1alpha1/rollouts"}},
		{name: "a kind with its group", selectors: []policy.Selector{{Kind: "Rollout.argoproj.io"}}, want: []string{"argoproj.io/v1alpha1/rollouts"}},
		{name: "a built-in kind found", selectors: []policy.Selector{{Kind: "ReplicaSet"}, {Kind: "replicationcontroller"}}, want: []string{"apps/v1/replicasets", "v1/replicationcontrollers"}},
		{name: "a kind of two groups, named with one", selectors: []policy.Selector{{Kind: "Widget.other.example.com"}}, want: []string{"other.example.com/v1/widgets"}},
		{name: "a kind of two groups", selectors: []policy.Selector{{Kind: "Widget"}}, wantErr: "selectors[0]: kind Widget is served by several API groups (Widget.example.com, Widget.other.example.com): name one as Kind.group"},
		{name: "a kind in another group", selectors: []policy.Selector{{Kind: "Rollout.example.com"}}, wantErr: "selectors[0]: kind Rollout.example.com: the cluster serves no kind of that name with a scale subresource"},
		{name: "a kind without a scale subresource", selectors: []policy.Selector{{Kind: "Deployment"}, {Kind: "Job"}}, wantErr: "selectors[1]: kind Job: the cluster serves no kind of that name with a scale subresource"},
		{name: "a kind that cannot be patched", selectors: []policy.Selector{{Kind: "Gadget"}}, wantErr: "selectors[0]: kind Gadget: the cluster serves no kind of that name with a scale subresource"},
		{name: "a cluster-scoped kind", selectors: []policy.Selector{{Kind: "Pool"}}, wantErr: "selectors[0]: kind Pool: the cluster serves no kind of that name with a scale subresource"},
		{name: "kinds nobody serves", selectors: []policy.Selector{{Kind: "Rollout.argoproj.io"}, {Kind: "Nothing"}, {Kind: "Nothing.else.io"}},
			wantErr: "selectors[1]: kind Nothing: the cluster serves no kind of that name with a scale subresource\nselectors[2]: kind Nothing.else.io: the cluster serves no kind of that name with a scale subresource"},
	}
	kube := clustertest.APIServer(t, clustertest.DiscoveryBodies())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var kinds Kinds
			got, err := kinds.Resolve(kube, tt.selectors)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var resources []string
			for i, s := range got {
				resources = append(resources, s.Kind.Resource.GroupVersion().String()+"/"+s.Kind.Resource.Resource)
				if i < len(tt.selectors) && !reflect.DeepEqual(s.Labels, tt.selectors[i].Labels) {
					t.Errorf("selection %d labels %v, want %v", i, s.Labels, tt.selectors[i].Labels)
				}
			}
			if strings.Join(resources, " ") != strings.Join(tt.want, " ") {
				t.Errorf("resolved %q, want %q", resources, tt.want)
			}
		})
	}
}

// Discovery is asked once per Kinds, however many selectors it resolves.
func TestKindsDiscoverOnce(t *testing.T) {
	var asked atomic.Int64
	kube := clustertest.APIServer(t, clustertest.DiscoveryBodies(), func(path string) {
		if path == "/apis" {
			asked.Add(1)
		}
	})
	var kinds Kinds
	for range 3 {
		if _, err := kinds.Resolve(kube, []policy.Selector{{Kind: "Rollout"}, {Kind: "ReplicaSet"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := kinds.All(t.Context(), kube); err != nil {
		t.Fatal(err)
	}
	if asked.Load() != 1 {
		t.Errorf("discovery asked %d times, want 1", asked.Load())
	}
	var unused Kinds
	if _, err := unused.Resolve(kube, []policy.Selector{{Kind: policy.KindCronJob}}); err != nil || asked.Load() != 1 {
		t.Errorf("known kinds alone: discovery asked %d times in all, error %v; want no more", asked.Load(), err)
	}
}

// All offers the known kinds the cluster serves and, of the kinds found by
// discovery, those nsman may patch: ReplicaSets, which the shipped
// ClusterRole lets it list but not patch, are not offered.
func TestKindsAll(t *testing.T) {
	bodies := clustertest.DiscoveryBodies()
	bodies[clustertest.Refusal("patch", "apps", "replicasets")] = ""
	var kinds Kinds
	all, unavailable, err := kinds.All(t.Context(), clustertest.APIServer(t, bodies))
	if err != nil || unavailable != nil {
		t.Fatalf("unavailable %q, error %v; want neither", unavailable, err)
	}
	want := []string{"Deployment apps/v1", "StatefulSet apps/v1", "CronJob batch/v1", // not ScaledObject: KEDA is not installed
		"ReplicationController v1", "Rollout argoproj.io/v1alpha1", "Widget example.com/v1", "Widget other.example.com/v1"}
	if got := kindNames(all); strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("all kinds:\n%q\nwant\n%q", got, want)
	}
}

// kindNames are the kinds of selections, "Kind group/version" each.
func kindNames(selections []Selection) []string {
	var out []string
	for _, s := range selections {
		out = append(out, s.Kind.Name+" "+s.Kind.Resource.GroupVersion().String())
	}
	return out
}

// Each kind found by discovery is reviewed once per Kinds, however many
// workers ask for All at once, and only those: the known kinds are the
// shipped ClusterRole's.
func TestKindsAllReviewsEachKindOnce(t *testing.T) {
	var mu sync.Mutex
	reviews := 0
	kube := clustertest.APIServer(t, clustertest.DiscoveryBodies(), func(path string) {
		if strings.HasSuffix(path, "/selfsubjectaccessreviews") {
			mu.Lock()
			reviews++
			mu.Unlock()
		}
	})
	var kinds Kinds
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, _, err := kinds.All(t.Context(), kube); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	// ReplicationController, ReplicaSet, Rollout and the two Widgets.
	if reviews != 5 {
		t.Errorf("%d access reviews, want one per kind found: 5", reviews)
	}
}

// A group whose discovery fails (an APIService whose backend is down) is
// named, and fails no other: the kinds that answered are offered.
func TestKindsAllWithAGroupUnavailable(t *testing.T) {
	bodies := clustertest.WithUnavailableGroup(t, clustertest.DiscoveryBodies(), "metrics.example.com", "v1beta1")
	var kinds Kinds
	all, unavailable, err := kinds.All(t.Context(), clustertest.APIServer(t, bodies))
	if err != nil {
		t.Fatalf("error %v, want none: one group failed", err)
	}
	if strings.Join(unavailable, " ") != "metrics.example.com/v1beta1" {
		t.Errorf("unavailable %q, want metrics.example.com/v1beta1", unavailable)
	}
	want := []string{"Deployment apps/v1", "StatefulSet apps/v1", "CronJob batch/v1",
		"ReplicationController v1", "ReplicaSet apps/v1", "Rollout argoproj.io/v1alpha1", "Widget example.com/v1", "Widget other.example.com/v1"}
	if got := kindNames(all); strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("all kinds:\n%q\nwant\n%q", got, want)
	}

	// Discovery that fails wholly offers the known kinds, and says why.
	bodies["/apis"] = clustertest.Unavailable
	var none Kinds
	all, _, err = none.All(t.Context(), clustertest.APIServer(t, bodies))
	if err == nil || len(all) != len(policy.KnownKinds) {
		t.Errorf("discovery failed wholly: %q, error %v; want the known kinds and an error", kindNames(all), err)
	}
}

// The awake check of a target asleep reads every kind offered, even when an
// API group fails discovery, and leaves out the kinds nsman may not patch:
// a bare ReplicaSet it could not have put to sleep is not awake to it.
func TestAwakeWithAGroupUnavailable(t *testing.T) {
	bodies := clustertest.WithUnavailableGroup(t, awakeBodies("dev-7"), "metrics.example.com", "v1beta1")
	bodies[clustertest.Refusal("patch", "apps", "replicasets")] = ""
	got, _, err := NewAwake(awakeReads(clustertest.APIServer(t, bodies)), &Kinds{}).In(t.Context(), "dev-7", nil, policy.SleepTo{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"argocd-application-controller: CronJob/report", "kubectl: Deployment/web", "new: Deployment/api"}; !slices.Equal(got, want) {
		t.Errorf("awake %q, want %q", got, want)
	}
}

// The access reviews of the kinds found are asked side by side: a sweep
// waits for one, not for one per kind. The first review is held until a
// second arrives.
func TestKindsAllReviewsSideBySide(t *testing.T) {
	s := newSideBySide(func(path string, before int) sideRole {
		switch {
		case !strings.HasSuffix(path, "/selfsubjectaccessreviews"):
			return sideNone
		case before == 0:
			return sideHeld
		}
		return sideReleases
	})
	var kinds Kinds
	if _, _, err := kinds.All(t.Context(), clustertest.APIServer(t, clustertest.DiscoveryBodies(), s.observe)); err != nil {
		t.Fatal(err)
	}
	if s.sequential() {
		t.Error("the first access review waited out the second: the reviews were asked one after the other")
	}
}
