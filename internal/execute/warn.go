package execute

import (
	"context"
	"time"

	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/tell"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// warnOf tells, through x, the warning of entry e (policies[].warnBefore), once the
// record of it was written (recorded): a write conditional on the subject
// as listed, so that of sweeps racing one alone tells it, and in a dry run
// through a writer that sends nothing, which plans it and tells nothing.
// A warning not recorded is not told: the next sweep decides again. A
// sweep killed between the record and the notification loses that one
// notification (at most once): warnings are reminders, and a second one
// is worse than a missed one of several.
func warnOf(ctx context.Context, x *Executor, m policy.Manager, t decide.Target, e report.Entry, recorded bool) report.Entry {
	if e.Warning == nil {
		return e
	}
	if !recorded {
		e.Warning = nil
		return e
	}
	w := *e.Warning
	w.State = x.Writer.Done()
	e.Warning = &w
	if w.State != report.StateFired {
		e.Message += "; would warn: " + tell.DueSoonText(e.Target, &w)
		return e
	}
	e.Message += "; warned: " + tell.DueSoonText(e.Target, &w)
	notifyDueSoon(ctx, x, m, t, w)
	return e
}

// notifyDueSoon sends, through x, warning w of target t as a notification of event
// dueSoon, on the channel t or m picks (see Notifier.Route), with the
// links that let t's people extend it (see tell.Linker), when the sweep
// has a notifier. Its Idempotency-Key is derived from the subject, the
// policy, the due time and the threshold: the same warning, sent twice,
// carries the same key.
func notifyDueSoon(ctx context.Context, x *Executor, m policy.Manager, t decide.Target, w report.Warning) {
	if x.Notifier == nil {
		return
	}
	to, _ := x.Notifier.Route(t.Listed.NotifyChannel, m.NotifyChannel)
	if to == nil {
		return
	}
	due := w.Due.UTC()
	n := tell.Notification{
		Manager: tell.NotificationManager{Namespace: m.Namespace, Name: m.Name}, Rule: m.Rule != nil, Target: t.Name,
		Policy: w.Policy, Action: w.Action, Result: tell.ResultPending, Event: tell.EventDueSoon, Due: &due,
		Message: status.Truncate(tell.DueSoonText(t.Name, &w), status.MaxMessage), Time: x.Now.UTC(), Sweep: x.SweepID, Version: x.Version,
		Links: x.Links.For(t.Name, string(t.Listed.UID), x.Now),
	}
	key := status.Digest("%s/%s/%s/%s/%s/%s/%s", m.Namespace, m.Name, m.UID, t.Name, w.Policy, due.Format(time.RFC3339), w.Before)
	if err := to.Send(ctx, n, key); err != nil {
		x.Counts.NotifyFailed.Add(1)
		x.Log.Error("notification not delivered", "manager", m.Namespace+"/"+m.Name, "namespace", t.Name, "policy", w.Policy, "error", to.Redact(err))
		return
	}
	x.Counts.NotifySent.Add(1)
}
