package policy

import (
	"slices"
	"testing"
)

func TestActionKinds(t *testing.T) {
	if got, want := ActionTypes(), []string{ActionDelete, ActionScaleDown, ActionWebhook, ActionSleep}; !slices.Equal(got, want) {
		t.Errorf("ActionTypes() = %v, want %v", got, want)
	}
	type props struct {
		final, removes, queues, keeps, reclaims bool
		params                                  []string
	}
	for typ, want := range map[string]props{
		ActionDelete:    {final: true, removes: true, reclaims: true, params: []string{"via"}},
		ActionScaleDown: {final: true, reclaims: true, params: []string{"selectors", "replicas", "loadBalancers", "patches"}},
		ActionWebhook:   {final: true, queues: true, params: []string{"url"}},
		ActionSleep:     {keeps: true, reclaims: true, params: []string{"selectors", "replicas", "loadBalancers", "patches"}},
		"EXPLODE":       {final: true},
		"":              {final: true},
	} {
		k := Action{Type: typ}.Kind()
		var params []string
		for _, p := range k.params() {
			params = append(params, p.name)
		}
		got := props{final: k.NeverFinal() == "", removes: k.RemovesTarget(), queues: k.Queues(), keeps: k.KeepsState(), reclaims: k.Reclaims(), params: params}
		if k.Type() != typ || !slices.Equal(got.params, want.params) || got.final != want.final || got.removes != want.removes ||
			got.queues != want.queues || got.keeps != want.keeps || got.reclaims != want.reclaims {
			t.Errorf("%q: %s %+v, want %+v", typ, k.Type(), got, want)
		}
	}
	if got := StateKeepingAction(); got != ActionSleep {
		t.Errorf("StateKeepingAction() = %q, want %q", got, ActionSleep)
	}
}

// TestActionParamsRegistered holds every parameter an action reads to
// actionParams, which the strict parser checks for the others.
func TestActionParamsRegistered(t *testing.T) {
	for _, k := range actionKinds {
		for _, p := range k.params() {
			if !slices.ContainsFunc(actionParams, func(q actionParam) bool { return q.name == p.name }) {
				t.Errorf("%s reads %s, which actionParams lacks", k.Type(), p.name)
			}
		}
	}
}
