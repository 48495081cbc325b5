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
}

// Sweep removes decision files older than maxAge, and temporary files (ours and the hook's)
// older than tempAge. It touches only regular files with the names it knows; anything else is
// not its business. It goes on past errors and returns the first.
func Sweep(s *session.Session, now time.Time, maxAge, tempAge time.Duration) (SweepResult, error) {
	return sweep(s, now, maxAge, tempAge, true)
}

// SweepChannel is Sweep for a host channel, where the hook's event files are not leftovers but
// events waiting for the daemon: it leaves them alone.
func SweepChannel(s *session.Session, now time.Time, maxAge, tempAge time.Duration) (SweepResult, error) {
	return sweep(s, now, maxAge, tempAge, false)
}

func sweep(s *session.Session, now time.Time, maxAge, tempAge time.Duration, hookTemps bool) (SweepResult, error) {
	var res SweepResult
	var first error
	keep := func(err error) {
		if first == nil && err != nil {
			first = err
		}
	}
	keep(sweepDir(s, now, session.DecisionsDir, func(name string, age time.Duration) *int {
		switch {
		case isDecisionName(name) && age > maxAge:
			return &res.Unconsumed
		case strings.HasPrefix(name, session.TempPrefix) && age > tempAge:
			return &res.Temporary
		}
		return nil
	}))
	keep(sweepDir(s, now, session.BridgeDir, func(name string, age time.Duration) *int {
		if (hookTemps && strings.HasPrefix(name, hookTempPrefix) || strings.HasPrefix(name, session.TempPrefix)) && age > tempAge {
			return &res.Temporary
		}
		return nil
	}))
	if hookTemps {
		keep(sweepDir(s, now, session.StagingDir, func(name string, age time.Duration) *int {
			if strings.HasPrefix(name, hookTempPrefix) && age > tempAge {
				return &res.Temporary
			}
			return nil
		}))
	}
	return res, first
}

func isDecisionName(name string) bool {
	rid, ok := strings.CutSuffix(name, ".json")
	return ok && claudehook.ValidRID(rid)
}

// sweepDir removes the regular files of dir that pick counts, judging age by modification time.
func sweepDir(s *session.Session, now time.Time, dir string, pick func(name string, age time.Duration) *int) error {
	entries, err := s.ReadDir(dir, maxEntries)
	if err != nil && len(entries) == 0 {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("sweep %s: %w", dir, err)
	}
	var first error
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		name := dir + "/" + e.Name()
		fi, err := s.Lstat(name)
		if err != nil || !fi.Mode().IsRegular() {
			continue // gone already, or swapped for something that is not ours to remove
		}
		n := pick(e.Name(), now.Sub(fi.ModTime()))
		if n == nil {
			continue
		}
		if err := s.Remove(name); err != nil {
			if first == nil && !errors.Is(err, fs.ErrNotExist) {
				first = fmt.Errorf("sweep: %w", err)
			}
			continue
		}
		*n++
	}
	return first
}
