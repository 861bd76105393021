package sweep

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
				f := newFairShare(tt.max)
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
