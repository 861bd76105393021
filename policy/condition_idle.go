package policy

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nsman/nsman/policy/durtext"
	"github.com/nsman/nsman/policy/traffic"
)

// idleSecondsParam is IDLE's parameter, required: how long nothing may happen.
var idleSecondsParam = Param{Key: "idleSeconds", Kind: ParamSeconds, Min: 1, Required: "IDLE needs how long nothing may happen"}

// trafficParam is IDLE's traffic source: requests to the target within
// idleSeconds are activity now.
var trafficParam = Param{Key: "traffic", Kind: ParamTraffic, Absent: "no traffic is read"}

// idleCondition is IDLE: the policy holds once nothing has happened in the
// target for params.idleSeconds. It reads the target's TouchedAnnotation and asks
// for its newest activity (Input.Activity).
type idleCondition struct{}

func (idleCondition) Type() string    { return ConditionIdle }
func (idleCondition) Params() []Param { return []Param{idleSecondsParam, trafficParam} }
func (idleCondition) Evidence() Evidence {
	return Evidence{Activity: true, Touched: true}
}

func (idleCondition) parse(params map[string]any, pp *field.Path, strict bool) (Condition, field.ErrorList) {
	p := parser{strict: strict}
	c := Condition{Idle: p.secondsParam(params, pp, idleSecondsParam), Traffic: p.traffic(params, trafficParam.Key, pp)}
	return c, p.errs
}

func (idleCondition) judge(j judging) (Verdict, PolicyState, map[string]CheckState) {
	asleep := j.in.Asleep == j.p.Name && j.p.Action.Kind().KeepsState()
	verdict := judgeIdle(&j.state, j.p.Condition, j.in, j.i, asleep)
	return verdict, j.state, j.checks
}

// What an IDLE condition says of the activity it knows without reading
// the namespace: its creation, its TouchedAnnotation.
const (
	ActivityCreated = "namespace created"
	ActivityTouched = "touched (annotation " + TouchedAnnotation + ")"
)

// judgeIdle judges an IDLE condition, policy i's: it holds once the
// target's last activity is c.Idle old. Its creation and touched annotation
// are known; the rest (Input.Activity) is asked for only when those alone
// would let it hold, and its traffic (Input.Traffic) only when all those
// would: requests within c.Idle are activity now, and no answer keeps the
// policy waiting, or a SLEEP by it asleep.
// A touched annotation that does not parse, or says a time more than
// TouchLeeway ahead of Now, is ignored (and said so, in Problem), as a hold
// that does not parse is: an annotation keeps no namespace forever.
func judgeIdle(state *PolicyState, c Condition, in Input, i int, asleep bool) Verdict {
	last := Activity{At: in.TargetCreated, What: ActivityCreated}
	if in.TargetTouched != "" {
		touched, err := ParseTouched(in.TargetTouched)
		switch {
		case err != nil:
			state.Problem = fmt.Sprintf("annotation %s: %v: ignored", TouchedAnnotation, err)
		case touched.After(in.Now.Add(TouchLeeway)):
			state.Problem = fmt.Sprintf("annotation %s: %s is more than %s ahead: ignored", TouchedAnnotation, stamp(touched), durtext.Format(TouchLeeway))
		case touched.After(last.At):
			last = Activity{At: touched, What: ActivityTouched}
		}
	}
	switch {
	case in.Activity != nil && in.Activity.At.After(last.At):
		last = *in.Activity
	case in.Activity == nil && !in.Now.Before(last.At.Add(c.Idle)):
		return NeedActivity
	}
	ignored := ""
	if state.Problem != "" {
		ignored = " (" + state.Problem + ")"
	}
	if c.Traffic != nil && !in.Now.Before(last.At.Add(c.Idle)) {
		tr, read := in.Traffic[i]
		if !read {
			return NeedTraffic
		}
		state.Traffic = &tr
		if tr.Unknown != "" {
			// No answer changes nothing: a target awake stays so, one
			// asleep by this policy too.
			state.LastActivity, state.Holds = &last, asleep
			state.Detail = fmt.Sprintf("idle %s since %s by its activity (last: %s), but its traffic (%s) is not known: %s; %s%s",
				durtext.Format(c.Idle), stamp(last.At), last.What, tr.Source, tr.Unknown, unknownThen[asleep], ignored)
			if asleep {
				return Fire
			}
			return Wait
		}
		if tr.Requests > 0 { // at the step of c.Idle: a manager's status is not rewritten each sweep in use
			last = Activity{At: in.Now.Truncate(c.Idle), What: tr.Activity()}
		}
	}
	state.LastActivity = &last
	due := last.At.Add(c.Idle)
	if !in.Now.Before(due) {
		state.Holds = true
		state.Detail = fmt.Sprintf("idle %s since %s (last activity: %s)%s%s", durtext.Format(c.Idle), stamp(last.At), last.What, traffic.NoneSeen(state.Traffic), ignored)
		return Fire
	}
	state.Detail = fmt.Sprintf("last activity: %s at %s; idle %s at %s%s", last.What, stamp(last.At), durtext.Format(c.Idle), stamp(due), ignored)
	state.Due = due
	return Wait
}

// unknownThen says what a target does while its traffic is not known, by
// whether it is asleep by the policy.
var unknownThen = map[bool]string{false: "it waits for an answer", true: "asleep, it stays so"}

// TouchLeeway is how far ahead of a sweep's clock a TouchedAnnotation may
// be, and count: the clock of whoever wrote it may run ahead of the API
// server's.
const TouchLeeway = 5 * time.Minute

// ParseTouched parses a TouchedAnnotation: an RFC 3339 time, also with a
// space or a lower-case t between date and time, as RFC 3339 allows (date
// --rfc-3339=seconds writes one).
func ParseTouched(s string) (time.Time, error) {
	normal := s
	if len(s) > 10 && (s[10] == ' ' || s[10] == 't') {
		normal = s[:10] + "T" + s[11:]
	}
	if strings.HasSuffix(normal, "z") {
		normal = normal[:len(normal)-1] + "Z"
	}
	t, err := time.Parse(time.RFC3339, normal)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time (2026-11-24T09:30:00Z)", cut(s, 64))
	}
	return t, nil
}
