package execute

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// The places of --max-actions go one per namespace per round, whatever the
// order of the offers; what is pushed out is all the rest, each once.
func TestFairShareIsRoundRobinInAnyOrder(t *testing.T) {
	type subject struct{ namespace, key string }
	var subjects []subject
	for i := range 10 {
		subjects = append(subjects, subject{"a", fmt.Sprintf("a/m%02d", i)})
	}
	subjects = append(subjects, subject{"b", "b/m"}, subject{"c", "platform/rule"}, subject{"c", "c/m"})
	tests := map[string]struct {
		max  int
		want []string
	}{
		"one each":             {max: 3, want: []string{"a/m00", "b/m", "c/m"}},
		"a second round":       {max: 5, want: []string{"a/m00", "b/m", "c/m", "a/m01", "platform/rule"}},
		"the rest to the many": {max: 7, want: []string{"a/m00", "b/m", "c/m", "a/m01", "platform/rule", "a/m02", "a/m03"}},
		"one":                  {max: 1, want: []string{"a/m00"}},
		"room for all":         {max: 20, want: nil},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tt.max)))
			for range 50 {
				order := slices.Clone(subjects)
				rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
				f := NewFairShare(tt.max, "")
				carried := map[string]string{}
				for _, s := range order {
					beyond := f.beyond(s.namespace, s.key)
					c := &candidate{namespace: s.namespace, key: s.key}
					c.carryOut = func(granted bool) {
						if _, twice := carried[c.key]; twice {
							t.Errorf("%s carried out twice", c.key)
						}
						carried[c.key] = map[bool]string{true: "granted", false: "deferred"}[granted]
					}
					out := f.offer(c)
					if beyond != (out == c) {
						t.Errorf("%s: beyond said %v, the offer pushed out %v", s.key, beyond, out)
					}
					if out != nil {
						out.carryOut(false)
					}
				}
				var got []string
				for _, c := range f.granted() {
					if f.beyond(c.namespace, c.key) {
						t.Errorf("%s: placed, but beyond says it would be pushed out", c.key)
					}
					got = append(got, c.key)
					c.carryOut(true)
				}
				want := tt.want
				if want == nil {
					want = got // all of them, checked below
				}
				if !slices.Equal(got, want) {
					t.Fatalf("offered in order %v: granted %v, want %v", order, got, want)
				}
				if len(carried) != len(subjects) || len(got) != min(tt.max, len(subjects)) {
					t.Fatalf("%d carried out, %d granted; want %d and %d", len(carried), len(got), len(subjects), min(tt.max, len(subjects)))
				}
			}
		})
	}
}

// Each sweep draws its own order (its ID the salt): still one place per
// namespace per round, but no namespace and no subject is last in every
// sweep, whatever it is named; a tenant's early names win nothing.
func TestFairShareRotatesAcrossSweeps(t *testing.T) {
	type subject struct{ namespace, key string }
	var subjects []subject
	for _, ns := range []string{"0-a", "0-b", "0-c", "z"} {
		for i := range 3 {
			subjects = append(subjects, subject{ns, fmt.Sprintf("%s/m%d", ns, i)})
		}
	}
	subjects = append(subjects, subject{"z", "platform/rule"})
	placedIn, placed := map[string]int{}, map[string]int{}
	const sweeps = 200
	for i := range sweeps {
		f := NewFairShare(3, fmt.Sprintf("host-%08x", i))
		for _, s := range subjects {
			if out := f.offer(&candidate{namespace: s.namespace, key: s.key, carryOut: func(bool) {}}); out != nil {
				out.carryOut(false)
			}
		}
		got := map[string]int{}
		for _, c := range f.granted() {
			got[c.namespace]++
			placed[c.key]++
		}
		for ns, n := range got {
			if n != 1 {
				t.Fatalf("sweep %d: %d places in namespace %s, want at most one each of 3 places among 4 namespaces: %v", i, n, ns, got)
			}
			placedIn[ns]++
		}
	}
	for _, s := range subjects {
		// 3 of 4 namespaces a sweep, then one of 3 or 4 subjects: a
		// subject is placed in about a fifth of the sweeps; never is a
		// starvation, not chance.
		if placed[s.key] < sweeps/20 {
			t.Errorf("%s placed in %d of %d sweeps, want its share: %v", s.key, placed[s.key], sweeps, placed)
		}
	}
	if placedIn["z"] < sweeps/2 {
		t.Errorf("namespace z placed in %d of %d sweeps, want about 3 in 4", placedIn["z"], sweeps)
	}
}
