package lane

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/decisions"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/spool"
)

// A session's host channel (see session.ChannelDir) is where a hook running on the Mac hands its
// event over, one file per call, and finds its decision and the lease: all out of the agent's
// reach, so none of it can be forged, planted or raced from inside the session. The daemon takes
// each complete event file, judges it like a spool line, records it, and only then removes it:
// a crash in between replays the file, and its request id in the decision log skips it. A no
// objection is likewise answered only after the record, by emptying the event file and renaming
// it into decisions/: no file is made or removed for the common answer.

// channelDoor is the session's host channel (judgement.Channel): a folder of the daemon's where
// hooks running on the Mac hand over their calls and find their answers and lease. What it
// shares with the other doors (judging, answering, recording) is the embedded Lane's.
type channelDoor struct {
	*Lane
	// dir is the session's host channel and bridge its bridge folder; empty without one.
	dir, bridge string
	// kept is the channel kept open between passes while the session is busy (see keptHandle).
	kept keptHandle
	// swept are the channel's folders its last sweeps found nothing in to wait for; noEvents,
	// the channel as a listing found no event file in it.
	swept    decisions.Swept
	noEvents session.Quiet
}

// channelEventsMax bounds the event files taken in one pass; the rest wait for the next.
const channelEventsMax = 10000

// channelEvent is one event file waiting in a host channel.
type channelEvent struct {
	name string
	mod  time.Time
}

// pendingEvents lists the channel's event files, oldest first. It lists names only and looks at
// the event files alone: the folder also holds the lease and the decisions' folder. A channel
// unchanged since a listing found no event file in it is not listed again (quiet).
func pendingEvents(cs *session.Session, quiet *session.Quiet) []channelEvent {
	st := cs.StampOf(session.BridgeDir)
	if quiet.Unchanged(session.BridgeDir, st) {
		return nil
	}
	names, err := cs.ReadDirNames(session.BridgeDir, channelEventsMax)
	if err != nil && len(names) == 0 {
		quiet.Note(session.BridgeDir, st, false, time.Now())
		return nil
	}
	var evs []channelEvent
	seen := false
	for _, n := range names {
		if _, ok := decisions.EventRID(n); ok {
			seen = true
			evs = appendEvent(evs, cs, n)
		}
	}
	quiet.Note(session.BridgeDir, st, err == nil && !seen, time.Now()) // the file system's clock, not the lane's
	return oldestFirst(evs)
}

// namedEvents is pendingEvents for the event files of the request ids given, found by name:
// listing the channel for each call cost as much as reading the event.
func namedEvents(cs *session.Session, rids []string) []channelEvent {
	var evs []channelEvent
	for _, rid := range rids {
		evs = appendEvent(evs, cs, decisions.EventName(rid))
	}
	return oldestFirst(evs)
}

// appendEvent adds the channel's file n if it is a plain file.
func appendEvent(evs []channelEvent, cs *session.Session, n string) []channelEvent {
	name := session.BridgeDir + "/" + n
	fi, err := cs.Lstat(name)
	if err != nil || !fi.Mode().IsRegular() {
		return evs
	}
	return append(evs, channelEvent{name, fi.ModTime()})
}

func oldestFirst(evs []channelEvent) []channelEvent {
	slices.SortFunc(evs, func(a, b channelEvent) int { return a.mod.Compare(b.mod) })
	return evs
}

// heldAnswer is a no objection held back until its event's record is written. file is the
// event file as it was read and judged, kept open to become the answer.
type heldAnswer struct {
	name, rid string
	file      *os.File
}

// links is how many names the open file has (1 when it cannot be told).
func links(f *os.File) uint64 {
	fi, err := f.Stat()
	if err != nil {
		return 1
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// pass drains the session's host channel, and sweeps it on a housekeeping pass. It
// returns what lets go of the channel once the pass is over.
func (d *channelDoor) pass(ctx context.Context, p *Policy, w Work, now time.Time) (done func()) {
	cs, done := d.open(!w.Housekeep)
	if cs == nil {
		return done
	}
	// Events first: the sweep must never meet an event file still waiting.
	d.drain(ctx, cs, p, w.Channel)
	if w.Housekeep {
		d.housekeep(cs, p, w.Lease.Until, now)
	}
	return done
}

// housekeep renews the lease in the host channel and sweeps what hooks left there.
func (d *channelDoor) housekeep(cs *session.Session, p *Policy, until, now time.Time) {
	defer d.kept.releaseIdle(&d.env.Kept, now) // the next pass reopens it if this was the session's last call
	d.prepare(cs, until)
	res, err := decisions.SweepChannel(cs, now, 2*p.Cfg.DecisionTimeout, 2*p.Cfg.HookTimeout, &d.swept)
	d.reportSweep(res, err)
	d.stirred = d.stirred || res.Busy() || err != nil
}

// open is the session's host channel, prepared and open, and the function that lets go
// of it; nil when it has none. The handle is kept between passes when keep says so: see
// keptHandle.
func (d *channelDoor) open(keep bool) (*session.Session, func()) {
	if d.dir == "" {
		return nil, func() {}
	}
	return d.kept.get(&d.env.Kept, d.bridge, session.BridgeDir, d.env.Now(), keep, func() *session.Session { return d.fresh() })
}

// fresh prepares and opens the session's host channel for the caller alone, who closes it.
func (d *channelDoor) fresh() *session.Session {
	if err := os.MkdirAll(filepath.Join(d.bridge, "decisions"), 0o700); err != nil {
		d.env.Log.Warn("cannot prepare a session's host channel; its hooks on the Mac will use the session folder", "session", d.id, "err", err)
		return nil
	}
	s, err := session.OpenOwn(d.dir)
	if err != nil {
		d.env.Log.Warn("cannot open a session's host channel", "session", d.id, "err", err)
		return nil
	}
	return s
}

// drain judges, records and removes the channel's complete event files.
func (d *channelDoor) drain(ctx context.Context, cs *session.Session, p *Policy, ch ChannelWork) {
	var evs []channelEvent
	if ch.List {
		evs = pendingEvents(cs, &d.noEvents)
	} else {
		evs = namedEvents(cs, ch.Named)
	}
	if len(evs) > 0 {
		d.kept.touch(d.env.Now())
	}
	for len(evs) > 0 && ctx.Err() == nil {
		n := min(len(evs), d.env.Limits.BatchLines)
		if !d.batch(ctx, cs, p, evs[:n]) {
			return
		}
		evs = evs[n:]
	}
}

// batch handles some event files: decisions as it goes, the decision log in one write,
// then the counts and the removal. It reports false when the log write failed: the files stay
// and a retry is scheduled.
func (d *channelDoor) batch(ctx context.Context, cs *session.Session, p *Policy, evs []channelEvent) bool {
	started := time.Now()
	var outs []outcome
	var done []string
	var held []heldAnswer
	for _, ev := range evs {
		line, f, ok := d.readEvent(cs, ev, p)
		if !ok {
			continue
		}
		o := d.judge(ctx, source{cs, judgement.Channel}, p, line, started)
		o.backlog = ev.mod.Before(d.recon.since)
		done = append(done, ev.name)
		if o.held {
			held = append(held, heldAnswer{ev.name, o.rec.RID, f})
		} else {
			f.Close()
		}
		if !o.skip {
			outs = append(outs, o)
		}
	}
	for i := range outs {
		if outs[i].held { // answered right after the record: its latency runs to the record
			outs[i].latency = time.Since(started)
			outs[i].rec.LatencyUS = outs[i].latency.Microseconds()
		}
	}
	recorded := d.record(p, outs)
	adopted := d.answerHeld(cs, held, recorded, started)
	if !recorded {
		return false
	}
	for _, name := range done {
		if adopted[name] {
			continue
		}
		if err := cs.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			d.env.Log.Warn("cannot remove a host-channel event already recorded; it may be recorded again", "session", d.id, "err", err)
		}
	}
	for _, name := range done {
		rid, _ := decisions.EventRID(path.Base(name))
		d.res.Taken = append(d.res.Taken, rid)
	}
	return true
}

// answerHeld publishes the held answers: once recorded, each event file becomes its hook's
// answer (decisions.Adopt); unrecorded, or where that fails, the answer is written as any other
// and the event file stays for the removal or the retry. It returns the event files adopted.
func (d *channelDoor) answerHeld(cs *session.Session, held []heldAnswer, recorded bool, started time.Time) map[string]bool {
	adopted := map[string]bool{}
	for _, h := range held {
		if recorded {
			// Whatever a failed adoption left at the decision's name, decide writes over it.
			ok, _ := decisions.AdoptRead(cs, h.name, h.rid, h.file)
			if h.file.Close(); ok {
				adopted[h.name] = true
				continue
			}
		} else {
			h.file.Close()
		}
		d.decide(source{cs, judgement.Channel}, h.rid, claudehook.Allow, "", "", started, nil)
	}
	return adopted
}

// readEvent reads one event file as a spool line, and returns the file open read-write, to
// become its hook's answer (decisions.AdoptRead) without being opened again; the caller closes
// it. A file still being written (no newline yet) waits, unless it is older than a hook can
// live: its hook died mid-write, and it is judged as the damaged line it is.
func (d *channelDoor) readEvent(cs *session.Session, ev channelEvent, p *Policy) (spool.Line, *os.File, bool) {
	f, err := cs.OpenFile(ev.name, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrPermission) {
		f, err = cs.OpenFile(ev.name, os.O_RDONLY, 0) // made read-only (a umask): answered beside it
	}
	if err != nil {
		return spool.Line{}, nil, false
	}
	line, ok := d.readEventFile(cs, ev, p, f)
	if !ok {
		f.Close()
		return spool.Line{}, nil, false
	}
	return line, f, true
}

func (d *channelDoor) readEventFile(cs *session.Session, ev channelEvent, p *Policy, f *os.File) (spool.Line, bool) {
	if n := links(f); n > 1 {
		// A hook writes its event file once and never links it: a second name means someone
		// made this file elsewhere and linked it in. It is not the hook's, and is not read.
		d.env.Log.Warn("a host-channel event file has more than one name; it was refused and removed", "code", health.CodeSpoolRefused,
			"session", d.id, "file", ev.name, "links", n)
		if err := cs.Remove(ev.name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			d.env.Log.Warn("cannot remove a refused host-channel event", "session", d.id, "err", err)
		}
		return spool.Line{}, false
	}
	data, err := io.ReadAll(io.LimitReader(f, p.Cfg.MaxLineBytes+1))
	if err != nil {
		return spool.Line{}, false
	}
	if int64(len(data)) > p.Cfg.MaxLineBytes {
		fi, _ := f.Stat()
		return spool.Line{Oversized: true, Head: data[:min(len(data), 256)], Size: fi.Size()}, true
	}
	data = bytes.TrimLeft(data, "\n") // the fresh line the shell hook starts each event with
	if len(data) > 0 && data[len(data)-1] == '\n' {
		return spool.Line{Data: data[:len(data)-1], Size: int64(len(data) - 1)}, true
	}
	if d.env.Now().Sub(ev.mod) < 2*p.Cfg.HookTimeout {
		return spool.Line{}, false
	}
	return spool.Line{Data: data, Size: int64(len(data))}, true
}

// takeReceipts feeds the ledger the calls the host hook judged itself in this session (under
// lockdown, every call on the Mac), from the receipts it left in the host channel, and removes
// them: such a call is guarded, not an unguarded call of the transcript. A receipt that is not
// one the host hook writes is removed and counted as planted.
func (d *channelDoor) takeReceipts(now time.Time) {
	if d.dir == "" {
		return
	}
	dir := filepath.Join(d.dir, filepath.FromSlash(session.ReceiptsDir))
	// Never through a link, and never opening a FIFO planted there (which would block the pass).
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return // none yet: the host hook makes the folder with its first receipt
	}
	names, _ := f.Readdirnames(receiptsMax)
	f.Close()
	for _, n := range names {
		p := filepath.Join(dir, n)
		r, err := readReceipt(p)
		os.Remove(p)
		if err != nil {
			d.env.Log.Warn("a host-channel receipt that the host hook did not write was removed", "code", health.CodeForgedEvent, "session", d.id, "file", n, "err", err)
			continue
		}
		d.takeReceipt(r, now)
	}
}
