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

// channelEventsMax bounds the event files taken in one pass; the rest wait for the next.
const channelEventsMax = 10000

// openChannel is the session's host channel, prepared and open, and the function that lets go
// of it; nil when it has none. The handle is kept between passes: see keptHandle.
func (l *Lane) openChannel() (*session.Session, func()) {
	if l.channel == "" {
		return nil, func() {}
	}
	return l.ch.get(&l.env.Kept, l.chBridge, session.BridgeDir, l.env.Now(), func() *session.Session { return l.freshChannel() })
}

// freshChannel prepares and opens the session's host channel for the caller alone, who closes it.
func (l *Lane) freshChannel() *session.Session {
	if err := os.MkdirAll(filepath.Join(l.chBridge, "decisions"), 0o700); err != nil {
		l.env.Log.Warn("cannot prepare a session's host channel; its hooks on the Mac will use the session folder", "session", l.id, "err", err)
		return nil
	}
	s, err := session.OpenOwn(l.channel)
	if err != nil {
		l.env.Log.Warn("cannot open a session's host channel", "session", l.id, "err", err)
		return nil
	}
	return s
}

// channelEvent is one event file waiting in a host channel.
type channelEvent struct {
	name string
	mod  time.Time
}

// pendingEvents lists the channel's event files, oldest first. It lists names only and looks at
// the event files alone: the folder also holds the lease and the decisions' folder.
func pendingEvents(cs *session.Session) []channelEvent {
	names, err := cs.ReadDirNames(session.BridgeDir, channelEventsMax)
	if err != nil && len(names) == 0 {
		return nil
	}
	var evs []channelEvent
	for _, n := range names {
		if _, ok := decisions.EventRID(n); ok {
			evs = appendEvent(evs, cs, n)
		}
	}
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

// drainChannel judges, records and removes the channel's complete event files.
func (l *Lane) drainChannel(ctx context.Context, cs *session.Session, p *Policy, ch ChannelWork) {
	var evs []channelEvent
	if ch.List {
		evs = pendingEvents(cs)
	} else {
		evs = namedEvents(cs, ch.Named)
	}
	if len(evs) > 0 {
		l.ch.touch(l.env.Now())
	}
	for len(evs) > 0 && ctx.Err() == nil {
		n := min(len(evs), l.env.Limits.BatchLines)
		if !l.channelBatch(ctx, cs, p, evs[:n]) {
			return
		}
		evs = evs[n:]
	}
}

// channelBatch handles some event files: decisions as it goes, the decision log in one write,
// then the counts and the removal. It reports false when the log write failed: the files stay
// and a retry is scheduled.
func (l *Lane) channelBatch(ctx context.Context, cs *session.Session, p *Policy, evs []channelEvent) bool {
	started := time.Now()
	var outs []outcome
	var done []string
	var held []heldAnswer
	for _, ev := range evs {
		line, f, ok := l.readEvent(cs, ev, p)
		if !ok {
			continue
		}
		o := l.judge(ctx, source{cs, judgement.Channel}, p, line, started)
		o.backlog = ev.mod.Before(l.recon.since)
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
	recorded := l.record(p, outs)
	adopted := l.answerHeld(cs, held, recorded, started)
	if !recorded {
		return false
	}
	for _, name := range done {
		if adopted[name] {
			continue
		}
		if err := cs.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			l.env.Log.Warn("cannot remove a host-channel event already recorded; it may be recorded again", "session", l.id, "err", err)
		}
	}
	for _, name := range done {
		rid, _ := decisions.EventRID(path.Base(name))
		l.res.Taken = append(l.res.Taken, rid)
	}
	return true
}

// heldAnswer is a no objection held back until its event's record is written. file is the
// event file as it was read and judged, kept open to become the answer.
type heldAnswer struct {
	name, rid string
	file      *os.File
}

// answerHeld publishes the held answers: once recorded, each event file becomes its hook's
// answer (decisions.Adopt); unrecorded, or where that fails, the answer is written as any other
// and the event file stays for the removal or the retry. It returns the event files adopted.
func (l *Lane) answerHeld(cs *session.Session, held []heldAnswer, recorded bool, started time.Time) map[string]bool {
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
		l.decide(source{cs, judgement.Channel}, h.rid, claudehook.Allow, "", "", started, nil)
	}
	return adopted
}

// readEvent reads one event file as a spool line, and returns the file open read-write, to
// become its hook's answer (decisions.AdoptRead) without being opened again; the caller closes
// it. A file still being written (no newline yet) waits, unless it is older than a hook can
// live: its hook died mid-write, and it is judged as the damaged line it is.
func (l *Lane) readEvent(cs *session.Session, ev channelEvent, p *Policy) (spool.Line, *os.File, bool) {
	f, err := cs.OpenFile(ev.name, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrPermission) {
		f, err = cs.OpenFile(ev.name, os.O_RDONLY, 0) // made read-only (a umask): answered beside it
	}
	if err != nil {
		return spool.Line{}, nil, false
	}
	line, ok := l.readEventFile(cs, ev, p, f)
	if !ok {
		f.Close()
		return spool.Line{}, nil, false
	}
	return line, f, true
}

func (l *Lane) readEventFile(cs *session.Session, ev channelEvent, p *Policy, f *os.File) (spool.Line, bool) {
	if n := links(f); n > 1 {
		// A hook writes its event file once and never links it: a second name means someone
		// made this file elsewhere and linked it in. It is not the hook's, and is not read.
		l.env.Log.Warn("a host-channel event file has more than one name; it was refused and removed", "code", health.CodeSpoolRefused,
			"session", l.id, "file", ev.name, "links", n)
		if err := cs.Remove(ev.name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			l.env.Log.Warn("cannot remove a refused host-channel event", "session", l.id, "err", err)
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
	if l.env.Now().Sub(ev.mod) < 2*p.Cfg.HookTimeout {
		return spool.Line{}, false
	}
	return spool.Line{Data: data, Size: int64(len(data))}, true
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
