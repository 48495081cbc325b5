package decisions

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/session"
)

// maxEntries bounds one folder listing; a folder flooded past it is swept a slice at a time.
const maxEntries = 10000

// hookTempPrefix starts the names of the hook's own temporary files beside the spool, and of
// its event files in a host channel.
const hookTempPrefix = ".ev-"

// EventName is the name of a hook's event file for rid; EventRID is its inverse.
func EventName(rid string) string { return hookTempPrefix + rid }

// EventRID returns the request id of a hook's event file name (.ev-<rid>).
func EventRID(name string) (string, bool) {
	rid, ok := strings.CutPrefix(name, hookTempPrefix)
	return rid, ok && claudehook.ValidRID(rid)
}

// SweepResult counts what one Sweep removed.
type SweepResult struct {
	// Unconsumed are decisions no hook read: it had given up (or been killed) first.
	Unconsumed int
	// Temporary are temporary files a crash or a killed hook left behind.
	Temporary int
	// Waiting: a folder holds a file not yet old enough to sweep, or could not be listed or
	// emptied whole; a later sweep must look again.
	Waiting bool
}

// Busy reports whether the sweep removed anything or left anything for a later sweep.
func (r SweepResult) Busy() bool { return r.Unconsumed+r.Temporary > 0 || r.Waiting }

// Swept remembers the folders a sweep found nothing in that could ever be swept: unchanged,
// the next sweep does not list them (see session.Quiet).
type Swept = session.Quiet

// Sweep removes decision files older than maxAge, and temporary files (ours and the hook's)
// older than tempAge. It touches only regular files with the names it knows; anything else is
// not its business. It goes on past errors and returns the first. swept, when not nil, spares
// the listing of folders unchanged since a sweep found nothing in them to wait for.
func Sweep(s *session.Session, now time.Time, maxAge, tempAge time.Duration, swept *Swept) (SweepResult, error) {
	return sweep(s, now, maxAge, tempAge, true, swept)
}

// SweepChannel is Sweep for a host channel, where the hook's event files are not leftovers but
// events waiting for the daemon: it leaves them alone.
func SweepChannel(s *session.Session, now time.Time, maxAge, tempAge time.Duration, swept *Swept) (SweepResult, error) {
	return sweep(s, now, maxAge, tempAge, false, swept)
}

func sweep(s *session.Session, now time.Time, maxAge, tempAge time.Duration, hookTemps bool, swept *Swept) (SweepResult, error) {
	var res SweepResult
	var first error
	keep := func(err error) {
		if first == nil && err != nil {
			first = err
		}
	}
	keep(sweepDir(s, now, session.DecisionsDir, swept, &res.Waiting, func(name string) (*int, time.Duration) {
		switch {
		case isDecisionName(name):
			return &res.Unconsumed, maxAge
		case strings.HasPrefix(name, session.TempPrefix):
			return &res.Temporary, tempAge
		}
		return nil, 0
	}))
	keep(sweepDir(s, now, session.BridgeDir, swept, &res.Waiting, func(name string) (*int, time.Duration) {
		if hookTemps && strings.HasPrefix(name, hookTempPrefix) || strings.HasPrefix(name, session.TempPrefix) {
			return &res.Temporary, tempAge
		}
		return nil, 0
	}))
	if hookTemps {
		keep(sweepDir(s, now, session.StagingDir, swept, &res.Waiting, func(name string) (*int, time.Duration) {
			if strings.HasPrefix(name, hookTempPrefix) {
				return &res.Temporary, tempAge
			}
			return nil, 0
		}))
	}
	return res, first
}

func isDecisionName(name string) bool {
	rid, ok := strings.CutSuffix(name, ".json")
	return ok && claudehook.ValidRID(rid)
}

// sweepDir removes the regular files of dir that pick names, once older (by modification time)
// than the age pick gives, and sets busy when it leaves one for a later sweep.
func sweepDir(s *session.Session, now time.Time, dir string, swept *Swept, busy *bool, pick func(name string) (n *int, after time.Duration)) error {
	// The stamp is taken before the listing: an entry made after it changes the folder's.
	st := s.StampOf(dir)
	if swept.Unchanged(dir, st) {
		return nil
	}
	entries, err := s.ReadDir(dir, maxEntries)
	if err != nil && len(entries) == 0 {
		swept.Note(dir, st, false, now)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("sweep %s: %w", dir, err)
	}
	waiting := err != nil // a listing cut short leaves entries unseen
	var first error
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		n, after := pick(e.Name())
		if n == nil {
			continue
		}
		name := dir + "/" + e.Name()
		fi, err := s.Lstat(name)
		if err != nil || !fi.Mode().IsRegular() {
			continue // gone already, or swapped for something that is not ours to remove
		}
		if now.Sub(fi.ModTime()) <= after {
			waiting = true // not old enough yet: the folder must be listed again
			continue
		}
		if err := s.Remove(name); err != nil {
			waiting = true
			if first == nil && !errors.Is(err, fs.ErrNotExist) {
				first = fmt.Errorf("sweep: %w", err)
			}
			continue
		}
		*n++
	}
	swept.Note(dir, st, !waiting, now)
	*busy = *busy || waiting
	return first
}
