package execute

import (
	"maps"
	"slices"
	"testing"

	"github.com/nsman/nsman/policy"
)

// TestEveryActionHasAHome holds the executor's registry to policy's: an
// action parsed is one the executor carries out.
func TestEveryActionHasAHome(t *testing.T) {
	if got, want := slices.Sorted(maps.Keys(actions)), slices.Sorted(slices.Values(policy.ActionTypes())); !slices.Equal(got, want) {
		t.Errorf("the executor carries out %v, policy registers %v", got, want)
	}
	if _, unknown := actionOf("EXPLODE").(unknownAction); !unknown {
		t.Errorf("actionOf(EXPLODE) = %T, want unknownAction", actionOf("EXPLODE"))
	}
}
