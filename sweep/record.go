package sweep

import (
	"time"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/record"
	"github.com/nsman/nsman/internal/tell"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// managerRecord is manager l's record, as listed in sweep r.
func (s *Sweeper) managerRecord(r *sweepRun, l cluster.Listed) *record.Manager {
	return &record.Manager{Env: s.env, At: r.status, Obj: l.Obj, Now: r.now, Stored: r.status.Read(l),
		Events: s.eventsOn(l.Obj, r.now)}
}

// eventsOn writes the Events on manager (or rule) obj, at now.
func (s *Sweeper) eventsOn(obj *unstructured.Unstructured, now time.Time) tell.ManagerEvents {
	return tell.ManagerEvents{Writer: s.writer, Log: s.log, SweepID: s.cfg.SweepID, Obj: obj, Now: now}
}
