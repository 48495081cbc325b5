package lane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coworkbridge/coworkbridge/collector/internal/plants"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/spool"
)

// spoolDoor is the session's spool (judgement.Spool): the file in the session's bridge folder
// that hooks in the VM append their calls to, beside the agent. It reads complete lines from the
// committed offsets, hands each to the lane's judgement, and rotates and retires the files; what
// it shares with the other doors (judging, answering, recording) is the embedded Lane's.
type spoolDoor struct {
	*Lane
	// partial: what the last drain learnt of each spool's unfinished last line, by offset key.
	partial map[string]spool.Partial
	// refused is the last spool refusal reported, so that it is reported once.
	refused string
	// backlog, by offset key, is where each spool stood on the first pass (nil before it).
	backlog map[string]int64
	// noRotated is the bridge folder as a listing found no rotated spool in it.
	noRotated session.Quiet
}

// SpoolBase is the name of a session's spool in its bridge folder.
var SpoolBase = path.Base(session.SpoolFile)

// IsSpoolName reports whether base names a spool, current or rotated, in the bridge folder.
func IsSpoolName(base string) bool {
	return base == SpoolBase || strings.HasPrefix(base, rotatedPrefix) && strings.HasSuffix(base, ".jsonl")
}

// A rotated spool is named events.r<unix nanoseconds>.jsonl, so its age survives a restart.
const rotatedPrefix = "events.r"

func rotatedName(at time.Time) string {
	return session.BridgeDir + "/" + rotatedPrefix + strconv.FormatInt(at.UnixNano(), 10) + ".jsonl"
}

// rotatedAt parses a rotated spool's name.
func rotatedAt(base string) (time.Time, bool) {
	digits, ok := strings.CutPrefix(base, rotatedPrefix)
	if !ok {
		return time.Time{}, false
	}
	if digits, ok = strings.CutSuffix(digits, ".jsonl"); !ok {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}, false
	}
	return time.Unix(0, n), true
}

// OffsetKey keys a spool's position by session and file identity: a spool renamed aside keeps
// its position, a new file at the old name starts from zero.
func OffsetKey(dir string, id spool.Identity) string {
	return fmt.Sprintf("%s#%d:%d", dir, id.Dev, id.Ino)
}

// OffsetPrefix begins the keys of everything kept for the session in folder dir in the offsets
// store.
func OffsetPrefix(dir string) string { return dir + "#" }

// moved reports whether the session's spool may hold something not yet read: anything but a
// plain file read to its end (a new file, more bytes, fewer, a link, a second name, a line still
// waiting for its newline). One look instead of opening and reading it, for the passes that an
// event in the host channel causes; the housekeeping pass always reads it (and rotates it).
func (d *spoolDoor) moved(s *session.Session) bool {
	fi, err := s.Lstat(session.SpoolFile)
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err != nil || !fi.Mode().IsRegular() || session.Links(fi) > 1 {
		return true
	}
	id, err := spool.IdentityOf(fi)
	if err != nil {
		return true
	}
	key := OffsetKey(d.dir, id)
	pos, ok := d.env.Offsets.Lookup(key)
	if !ok {
		return fi.Size() > 0
	}
	return pos.Offset != fi.Size() || d.partial[key].Clear > 0
}

// backlogOf notes how far each spool of the session reaches on the first pass since it was
// followed: what lies there was written while no daemon was, and is caught up, not counted
// against the session's budget. A spool that appears later has no backlog.
func backlogOf(s *session.Session, dir string) map[string]int64 {
	b := map[string]int64{}
	for _, name := range append(rotatedSpools(s, nil), session.SpoolFile) {
		fi, err := s.Lstat(name)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if id, err := spool.IdentityOf(fi); err == nil {
			b[OffsetKey(dir, id)] = fi.Size()
		}
	}
	return b
}

// rotatedSpools lists the session's rotated spools, oldest first. quiet, when not nil, spares
// the listing of a bridge folder unchanged since one found none.
func rotatedSpools(s *session.Session, quiet *session.Quiet) []string {
	st := s.StampOf(session.BridgeDir)
	if quiet.Unchanged(session.BridgeDir, st) {
		return nil
	}
	entries, err := s.ReadDir(session.BridgeDir, 10000)
	if err != nil && len(entries) == 0 {
		quiet.Note(session.BridgeDir, st, false, time.Now())
		return nil
	}
	var names []string
	for _, e := range entries {
		if _, ok := rotatedAt(e.Name()); ok {
			names = append(names, e.Name())
		}
	}
	quiet.Note(session.BridgeDir, st, err == nil && len(names) == 0, time.Now()) // the file system's clock, not the lane's
	slices.SortFunc(names, func(a, b string) int {
		ta, _ := rotatedAt(a)
		tb, _ := rotatedAt(b)
		return ta.Compare(tb)
	})
	for i, n := range names {
		names[i] = session.BridgeDir + "/" + n
	}
	return names
}

// drain handles the complete lines of one spool from its committed position, then rotates
// it or, for a rotated one, removes it once nothing more can arrive.
func (d *spoolDoor) drain(ctx context.Context, s *session.Session, p *Policy, name string, rotated bool) {
	f, err := s.OpenSole(name, os.O_RDONLY)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		d.refuse(name, err)
		if !rotated {
			d.replace(s, p, name)
		}
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		d.env.Log.Warn("cannot examine a spool", "session", d.id, "spool", name, "err", err)
		return
	}
	id, err := spool.IdentityOf(fi)
	if err != nil {
		d.env.Log.Error("cannot identify spool files on this platform", "err", err)
		return
	}
	key := OffsetKey(d.dir, id)
	r, reset, err := spool.NewReader(f, d.env.Offsets.Get(key), p.Cfg.MaxLineBytes)
	if err != nil {
		d.refuse(name, err)
		return
	}
	if reset != spool.NoReset {
		d.env.Log.Warn("spool was "+string(reset)+" since it was last read; reading it from the start", "session", d.id, "spool", name)
	}
	r.Resume(d.partial[key])
	for ctx.Err() == nil {
		more, ok := d.batch(ctx, s, p, r, key)
		if !ok || !more {
			break
		}
	}
	if pa := r.Partial(); pa.Clear > 0 {
		d.partial[key] = pa
	} else {
		delete(d.partial, key)
	}
	if ctx.Err() == nil {
		d.retire(s, f, r, key, name, rotated)
	}
}

// refuse reports a spool that is not a plain file, once per cause.
func (d *spoolDoor) refuse(name string, err error) {
	if d.refused == err.Error() {
		return
	}
	d.refused = err.Error()
	d.env.Log.Warn("refusing to read a session's spool", "code", health.CodeSpoolRefused, "session", d.id, "spool", name, "err", err)
	d.env.Health.Count(d.id, health.CodeSpoolRefused)
}

// replace takes away what stands at the spool's name when it is not a plain file of its own
// (a link, a hard link, a FIFO, a folder): hooks in the VM would deny every call until it went. Only the agent plants
// such things there, so the session is quarantined too. A link or FIFO is removed, never
// followed or opened; a folder is moved aside whole.
func (d *spoolDoor) replace(s *session.Session, p *Policy, name string) {
	fi, err := s.Lstat(name)
	linked := err == nil && fi.Mode().IsRegular() && session.Links(fi) > 1
	if err != nil || fi.Mode().IsRegular() && !linked {
		return
	}
	what := fmt.Sprintf("the spool was replaced by a %v", fi.Mode().Type())
	if linked {
		// Removing the name leaves the other file as it was; its lines were never read.
		what = "the spool was replaced by a hard link to another file"
	}
	if fi.IsDir() {
		err = s.MoveAside(name, name+".planted-"+strconv.FormatInt(d.env.Now().UnixNano(), 10))
	} else {
		err = s.Remove(name)
	}
	if err != nil {
		d.env.Log.Warn("cannot take away what was planted at a session's spool", "session", d.id, "err", err)
	}
	d.refused = "" // a new plant is reported again
	d.plants.Suspect(plants.Suspect{Rule: ruleid.PlantedSpool, What: what})
	d.checkPlants(s, p)
}

// batch handles up to BatchLines lines: decisions as it goes, then the decision log in one write,
// then the counts and the offset. more: lines may remain. ok: false when the log write failed, in
// which case the offset stays and a retry is scheduled.
func (d *spoolDoor) batch(ctx context.Context, s *session.Session, p *Policy, r *spool.Reader, key string) (more, ok bool) {
	started := time.Now()
	var outs []outcome
	more = true
	limit := d.env.Limits.BatchLines
	if d.window > 0 {
		limit = d.window
	}
	for n := 0; n < limit; n++ {
		line, err := r.Next()
		if errors.Is(err, io.EOF) {
			more = false
			break
		}
		if err != nil {
			d.env.Log.Warn("cannot read a spool; retrying at the next change", "session", d.id, "err", err)
			more = false
			break
		}
		if !line.Oversized && len(bytes.TrimSpace(line.Data)) == 0 {
			continue // the fresh line each hook append starts with
		}
		if o := d.judge(ctx, source{s, judgement.Spool}, p, line, started); !o.skip {
			o.backlog = line.End <= d.backlog[key]
			outs = append(outs, o)
		}
	}
	if !d.record(p, outs) {
		return false, false
	}
	if pos := r.Position(); pos != d.env.Offsets.Get(key) {
		d.env.Offsets.Set(key, pos)
		d.res.Commit = true
	}
	return more, true
}

// retire rotates a drained spool that is large or idle, and removes a rotated one that is drained
// and old enough that no hook can still be appending to it.
func (d *spoolDoor) retire(s *session.Session, f *os.File, r *spool.Reader, key, name string, rotated bool) {
	fi, err := f.Stat()
	if err != nil || r.Position().Offset != fi.Size() {
		return // a partial line waits for its newline
	}
	now := d.env.Now()
	if rotated {
		at, _ := rotatedAt(path.Base(name))
		if now.Sub(at) < d.env.Limits.RotateGrace {
			return
		}
		if err := s.Remove(name); err != nil {
			d.env.Log.Warn("cannot remove a drained spool", "session", d.id, "spool", name, "err", err)
			return
		}
		d.env.Offsets.Forget(key)
		delete(d.partial, key)
		d.res.Commit = true
		return
	}
	if fi.Size() < d.env.Limits.RotateBytes && (fi.Size() == 0 || now.Sub(fi.ModTime()) < d.env.Limits.RotateIdle) {
		return
	}
	to := rotatedName(now)
	if err := s.Rename(name, to); err != nil {
		d.env.Log.Warn("cannot rotate a spool", "session", d.id, "err", err)
		return
	}
	d.env.Log.Debug("spool rotated", "session", d.id, "bytes", fi.Size(), "to", to)
	// Back once the grace has passed, to drain what late hooks added and remove it.
	d.again(Again{After: d.env.Limits.RotateGrace + time.Second, Housekeep: true})
}
