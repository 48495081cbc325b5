package lane

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/ruleid"

	"github.com/coworkbridge/coworkbridge/collector/internal/plants"
	"github.com/coworkbridge/coworkbridge/decisions"
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// In the VM loop the hook and the agent share the bridge folder, so forgery there cannot be
// prevented (see THREATS.md); it is detected. The watcher reports every decision file that
// appears: one the daemon did not write is a forged answer. It also reports every change to the
// lease: one that is not a plain file holding a time we could have written is a plant, replaced
// at once. Either quarantines the session and leaves a record in the decision log.

// checkPlants records the attempts the watcher saw and verifies the lease when asked. It runs on
// the session's worker.
func (l *Lane) checkPlants(s *session.Session, p *Policy) {
	now := l.env.Now()
	found, check := l.plants.Take(now)
	if check {
		if what := l.verifyLease(s, l.leaseMax); what != "" {
			found = append(found, plants.Suspect{Rule: ruleid.PlantedLease, What: what})
		}
	}
	if len(found) == 0 {
		return
	}
	l.stirred = true
	// Quarantine first: the session's next call is denied even if the record below is slow.
	l.Quarantine(found[0].What)
	recs := make([]telemetry.Record, 0, len(found))
	for _, f := range found {
		recs = append(recs, judgement.Attempt(now, l.id, f.RID, p.Cfg.Mode, f.Rule, f.What))
		l.env.Log.Warn("attempt on the guard in a session", "code", health.CodeSessionTampered, "session", l.id, "rule", f.Rule, "what", f.What)
	}
	if err := l.env.Sink.WriteBatch(recs); err != nil {
		l.env.Health.Count("", health.CodeTelemetryFailed)
		l.env.Log.Warn("cannot record an attempt on the guard in the decision log", "code", health.CodeTelemetryFailed, "session", l.id, "err", err)
	}
}

// verifyLease replaces a lease that we cannot have written, and says what stood there; "" when
// the lease is ours (or gone: removing it only makes the session's hooks deny).
func (l *Lane) verifyLease(s *session.Session, leaseUntil time.Time) string {
	fi, err := s.Lstat(session.AliveFile)
	if err != nil {
		return ""
	}
	// The lease as this lane last wrote or read it, unchanged since: no one else has written
	// it (any write, link, rename or change of mode gives it another change time).
	seen := session.StampOf(fi)
	if l.OwnLease(fi) {
		return ""
	}
	until, read, rerr := decisions.ReadAliveStamped(s)
	var what string
	switch {
	case errors.Is(rerr, fs.ErrNotExist):
		return "" // withdrawn between the two looks (a shutdown does that), which is no plant
	case fi.Mode()&fs.ModeSymlink != 0:
		what = "the alive lease was replaced by a symbolic link"
	case !fi.Mode().IsRegular():
		what = fmt.Sprintf("the alive lease was replaced by a %v", fi.Mode().Type())
	case session.Links(fi) > 1:
		what = "the alive lease was replaced by a hard link to another file"
	case rerr != nil:
		what = fmt.Sprintf("the alive lease was replaced by a file coworkbridge did not write (%d bytes)", fi.Size())
	case until.After(leaseUntil):
		what = "the alive lease was replaced by one running past any coworkbridge wrote"
	case fi.ModTime().After(leaseUntil.Add(time.Second)):
		what = "the alive lease was dated past any coworkbridge wrote"
	default:
		if read == seen { // both looks saw the one file checked here
			l.setOwnLease(seen)
		}
		return ""
	}
	if err := decisions.RemoveAlive(s); err == nil {
		l.prepare(s, leaseUntil)
	}
	return what
}
