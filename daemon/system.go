package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/hosthook"
	"github.com/coworkbridge/coworkbridge/hostsocket"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// serving is what host calls are judged under, published by Run's goroutine at every change.
type serving struct {
	snap managedconfig.Snapshot
	// on: coworkbridge guards sessions; failing: a broken file meant enforce, every call denied.
	on, failing bool
	stamp       telemetry.Stamp
}

// systemFolders makes root's folders for system mode, or tightens the ones there: the state and
// the logs 0700, the drop folder sticky and writable by all (as /tmp), so that a hook can leave
// a record and remove only its own, and its parent passable by all (0711) to reach it.
func systemFolders(p managedconfig.Paths) error {
	for _, dir := range []string{p.StateDir, p.LogDir} {
		if err := ownedFolder(dir, 0o700); err != nil {
			return err
		}
	}
	if err := ownedFolder(p.DropDir, 0o1733|fs.ModeSticky); err != nil {
		return err
	}
	return traversable(filepath.Dir(p.DropDir))
}

// traversable lets every user pass through dir, root's, to the drop folder in it (MkdirAll made it
// 0700 beside the state): it adds the search bits for group and others and nothing else, so
// that a folder already open (/var/lib) stays as it is and nobody may list or write it.
func traversable(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("check %s: %w", dir, err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !fi.IsDir() || ok && int(st.Uid) != os.Geteuid() {
		return nil // not ours to change: its owner decides who passes
	}
	if want := fi.Mode().Perm() | 0o011; want != fi.Mode().Perm() {
		if err := os.Chmod(dir, want); err != nil {
			return fmt.Errorf("let users reach %s's drop folder: %w", dir, err)
		}
	}
	return nil
}

// ownedFolder makes dir with mode, or checks that the one there is a real folder of this
// process's user and sets its mode.
func ownedFolder(dir string, mode fs.FileMode) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("check %s: %w", dir, err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !fi.IsDir() || (ok && int(st.Uid) != os.Geteuid()) {
		return fmt.Errorf("%s is not a folder of uid %d (a link, a file or another user's): remove it and start again", dir, os.Geteuid())
	}
	if err := os.Chmod(dir, mode); err != nil {
		return fmt.Errorf("set the mode of %s: %w", dir, err)
	}
	return nil
}

// hostCalls answers the host hooks of every user over the socket: the calls are judged by
// hosthook.Callers (each caller under their own home's policy), the records written here.
type hostCalls struct {
	d       *Daemon
	callers *hosthook.Callers
}

// Serve answers one request. A panic serving it is an error answer, never the end of the
// daemon that serves every user: the hook then judges alone, which in enforce is a deny.
func (h *hostCalls) Serve(ctx context.Context, p hostsocket.Peer, r hostsocket.Request) (a hostsocket.Answer) {
	a = hostsocket.Answer{V: hostsocket.Version}
	defer func() {
		if v := recover(); v != nil {
			h.d.log.Error("a host call failed in the daemon; the hook answers it alone", "code", health.CodeHostCallFailed, "uid", p.UID, "panic", v)
			h.d.health.Count("", health.CodeHostCallFailed)
			a = hostsocket.Answer{V: hostsocket.Version, Error: fmt.Sprintf("the daemon failed on this call (%v)", v)}
		}
	}()
	switch r.Kind {
	case hostsocket.KindCall:
		return h.call(ctx, p, r)
	case hostsocket.KindStatus:
		data, err := json.Marshal(h.d.statusFor(p.UID))
		if err != nil {
			a.Error = err.Error()
		}
		a.Status = data
		return a
	}
	a.Error = fmt.Sprintf("unknown request %q", r.Kind)
	return a
}

func (h *hostCalls) call(ctx context.Context, p hostsocket.Peer, r hostsocket.Request) hostsocket.Answer {
	started := time.Now()
	a := hostsocket.Answer{V: hostsocket.Version}
	sv := h.d.serving.Load()
	if sv == nil || !sv.on {
		a.Off = true
		return a
	}
	serving := hosthook.Serving{Snap: sv.snap, Failing: sv.failing, Stamp: sv.stamp}
	answer := h.callers.Answer
	if r.Oversized > 0 {
		answer = h.callers.Oversized
	}
	out, rec, err := answer(ctx, p.UID, hosthook.Request{Payload: r.Payload, ConfigDir: r.ConfigDir, HostSession: r.HostSession}, serving, started)
	if err != nil {
		a.Error = err.Error()
		return a
	}
	if rec != nil {
		// The answer waits for its record: a call let run and then a daemon killed must not
		// leave a call with no record, and a socket call has no spool to be read again.
		h.d.recordHostCall(ctx, *rec)
	}
	a.Output = out
	return a
}

// hostView is what uid's worker sees of a host call judged at the socket, asked once: where its
// links lead as uid (root follows no link of a user's) and the state of its session id (system
// mode has no collector of root's).
func (d *Daemon) hostView(uid uint32, p claudehook.Payload, id string) hosthook.View {
	g := d.watching.Load()
	if g == nil || g.workers == nil {
		return hosthook.View{ResolveErr: errors.New("no worker is running")}
	}
	r, st, err := g.workers.View(context.Background(), uid, p, id)
	if err != nil {
		if id != "" {
			d.log.Warn("cannot ask a user's worker for a session's state; the host call is judged without it", "uid", uid, "session", id, "err", err)
		}
		return hosthook.View{ResolveErr: err}
	}
	v := hosthook.View{Resolved: r, Tracked: st.Tracked}
	if st.Tracked {
		v.Session = hosthook.SessionState{Quarantined: st.Quarantined, Flow: st.Flow,
			Judged: func(r claudehook.Receipt) { g.workers.Receipt(uid, id, r) }}
	}
	return v
}

// hostRecord is a host call's record on its way to the writer; done closes once it is in the
// decision log or, failing that, in the state's drop folder.
type hostRecord struct {
	rec  telemetry.Record
	done chan struct{}
}

// recordWait bounds how long an answer waits for its record: the writer appends in batches in
// milliseconds, and a record still queued past this is written all the same.
const recordWait = 2 * time.Second

// recordHostCall queues a host call's record and waits until it is written (or kept in the
// state's drop folder for the next import). One that cannot be queued is dropped there at once,
// so that it is neither lost nor holding up the answer for long.
//
// There is no writer goroutine: the caller that finds no other writing writes what is queued,
// its own record and those that came meanwhile, in one append; the others wait for it. A call
// alone is written with no hand-off between goroutines (two wake-ups a call, a tenth of what
// root spent on a socket call beside the judgement), and a burst is still one append.
func (d *Daemon) recordHostCall(ctx context.Context, rec telemetry.Record) {
	hr := hostRecord{rec: rec, done: make(chan struct{})}
	select {
	case d.hostRecs <- hr:
	default:
		d.dropHostRecord(rec)
		return
	}
	d.writeQueuedHostRecords()
	select {
	case <-hr.done:
		return
	default: // another caller is writing it
	}
	t := time.NewTimer(recordWait)
	defer t.Stop()
	select {
	case <-hr.done:
	case <-t.C:
		d.log.Warn("a host call's record was not written in time; the call is answered and its record stays queued", "code", health.CodeTelemetryFailed, "rid", rec.RID)
	case <-ctx.Done():
	}
}

func (d *Daemon) dropHostRecord(rec telemetry.Record) {
	d.health.Count("", health.CodeTelemetryFailed)
	dir := filepath.Join(d.paths.StateDir, "dropped")
	if err := os.MkdirAll(dir, 0o700); err == nil {
		if err = telemetry.Drop(dir, rec); err == nil {
			select {
			case d.dropped <- struct{}{}:
			default: // an import is already due
			}
			return
		}
	}
	d.log.Error("a host call's record could not be written or kept", "code", health.CodeTelemetryFailed, "rid", rec.RID)
}

// dropImportInterval is how often the drop folders are looked at besides each heartbeat, and
// dropImportSoon how soon after the daemon dropped a host call's record there itself. The
// interval is the lease check's at the default rescan, so that on the daemon's metronome the
// two wake it together: at 10 s, the imports alone woke an idle daemon twice as often.
const (
	dropImportInterval = 15 * time.Second
	dropImportSoon     = time.Second
)

// importDropped moves the records hooks dropped into the decision log: the system drop folder's
// (each under the user owning its file) and the state's own.
func (d *Daemon) importDropped() {
	g := d.watching.Load()
	if g == nil {
		return
	}
	d.importing.Lock()
	defer d.importing.Unlock()
	for _, dir := range []string{d.paths.DropDir, filepath.Join(d.paths.StateDir, "dropped")} {
		im, err := g.log.ImportDropped(dir, userName)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			d.log.Warn("cannot import the records hooks dropped; they stay for the next heartbeat", "code", health.CodeTelemetryFailed, "folder", dir, "err", err)
		}
		if im.Records > 0 || len(im.Refused) > 0 {
			d.log.Info("imported the records hooks dropped", "folder", dir, "records", im.Records, "refused", strings.Join(im.Refused, "; "))
		}
	}
}

func lookupUID(uid uint32) (*user.User, error) {
	return user.LookupId(strconv.FormatUint(uint64(uid), 10))
}

func userName(uid uint32) string {
	if u, err := lookupUID(uid); err == nil {
		return u.Username
	}
	return ""
}

// statusFor is the health snapshot as the user uid may see it: root sees all; another user only
// the sessions under their home, the counts and warnings of those, and no other user's path
// (health.Snapshot.Scoped).
func (d *Daemon) statusFor(uid uint32) health.Snapshot {
	s := d.health.Snapshot(false)
	started := d.started.Load()
	s.Daemon.PID, s.Daemon.Version = os.Getpid(), d.version
	if started != nil {
		s.Daemon.StartedAt, s.Daemon.UptimeSeconds = *started, int64(d.now().Sub(*started).Seconds())
	}
	if sv := d.serving.Load(); sv != nil {
		s.Daemon.HeartbeatInterval = sv.snap.Config.HeartbeatInterval.String()
	}
	var workers []health.Worker
	if g := d.watching.Load(); g != nil && g.workers != nil {
		workers = g.workers.Workers()
	}
	if uid == 0 {
		s.Workers = workers
		return s
	}
	for _, w := range workers {
		if w.UID == uid {
			s.Workers = append(s.Workers, w)
		}
	}
	home := ""
	if u, err := lookupUID(uid); err == nil && filepath.IsAbs(u.HomeDir) && u.HomeDir != "/" {
		home = filepath.Clean(u.HomeDir)
	}
	return s.Scoped(func(path string) bool {
		return home != "" && strings.HasPrefix(filepath.Clean(path), home+string(filepath.Separator))
	})
}

// listen starts the host hooks' socket in system mode; the channel yields its fatal error (nil
// channel, never ready, in user mode). stop ends it, every record queued written, before the
// guard's log closes.
func (d *Daemon) listen(ctx context.Context) (done <-chan error, stop func(), err error) {
	if !d.env.System {
		return nil, func() {}, nil
	}
	srv, err := hostsocket.Listen(d.paths.Socket, &hostCalls{d: d, callers: d.callers}, d.log.With("component", "socket"))
	if err != nil {
		return nil, nil, fmt.Errorf("system mode: %w", err)
	}
	d.hostRecs = make(chan hostRecord, hostRecordQueue)
	sctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	served := make(chan struct{})
	go func() { defer close(served); errc <- srv.Run(sctx) }()
	go d.userSockets(sctx, srv)
	d.log.Info("serving host hooks", "socket", d.paths.Socket)
	return errc, func() {
		cancel()
		<-served // no request is being served: nothing more is queued
		d.drainHostRecords()
	}, nil
}

// drainHostRecords writes every record still queued, waiting for a writer at work to finish. At
// stop there should be none (each writer looks at the queue again before letting go); what a
// writer that failed to look left must still reach the log before it closes.
func (d *Daemon) drainHostRecords() {
	d.hostWriting.Lock()
	defer d.hostWriting.Unlock()
	for len(d.hostRecs) > 0 {
		d.writeHostBatch(d.takeHostRecords())
	}
}

// userSockets gives each user served a socket of their own beside the shared one, following the
// users as they come and go at the rescan interval.
func (d *Daemon) userSockets(ctx context.Context, srv *hostsocket.Server) {
	for {
		if us, err := d.users(); err == nil {
			uids := make([]uint32, len(us))
			for i, u := range us {
				uids[i] = u.UID
			}
			srv.Users(uids)
		}
		every := 30 * time.Second
		if sv := d.serving.Load(); sv != nil && sv.snap.Config.RescanInterval > 0 {
			every = sv.snap.Config.RescanInterval
		}
		t := d.metro.Ticker(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		t.Stop()
	}
}

// hostRecordQueue bounds the host calls' records waiting for the writer; past it, a record goes
// to the state's drop folder (imported at the next heartbeat) rather than hold up an answer.
const hostRecordQueue = 4096

// hostBatch bounds the records one append writes.
const hostBatch = 64

// writeQueuedHostRecords writes the host calls' records waiting, all that are queued in each
// append, unless another caller is writing them: that one looks at the queue again once it is
// done, so a record queued while it wrote is never left behind.
func (d *Daemon) writeQueuedHostRecords() {
	for len(d.hostRecs) > 0 && d.hostWriting.TryLock() {
		d.writeHostBatch(d.takeHostRecords())
		d.hostWriting.Unlock()
	}
}

// takeHostRecords takes up to hostBatch records from the queue, without waiting.
func (d *Daemon) takeHostRecords() []hostRecord {
	batch := make([]hostRecord, 0, min(len(d.hostRecs), hostBatch))
	for len(batch) < hostBatch {
		select {
		case hr := <-d.hostRecs:
			batch = append(batch, hr)
		default:
			return batch
		}
	}
	return batch
}

func (d *Daemon) writeHostBatch(batch []hostRecord) {
	recs := make([]telemetry.Record, len(batch))
	for i, hr := range batch {
		recs[i] = hr.rec
	}
	if g := d.watching.Load(); g == nil || g.log.WriteBatch(recs) != nil {
		for _, rec := range recs {
			d.dropHostRecord(rec)
		}
	}
	for _, hr := range batch {
		close(hr.done)
	}
}

// logReaders is the group that may read the logs (telemetry.read_group), in system mode only,
// with the daemon's log folder opened to it (0750, that group's) or closed again (0700); a
// folder the admin named in telemetry.path is left as it is. A group this
// Mac does not know is logged and leaves the logs root's alone.
func (d *Daemon) logReaders(t managedconfig.Telemetry) (gid int, share bool) {
	if !d.env.System {
		if t.ReadGroup != "" {
			d.log.Warn("telemetry.read_group applies in system mode only; in per-user mode the logs are the user's", "read_group", t.ReadGroup)
		}
		return 0, false
	}
	dir, mode, gid := filepath.Dir(t.Path), fs.FileMode(0o700), -1
	if t.ReadGroup != "" {
		g, err := user.LookupGroup(t.ReadGroup)
		if err == nil {
			gid, err = strconv.Atoi(g.Gid)
		}
		if err != nil {
			d.log.Warn("telemetry.read_group names no group of this Mac; the logs stay root's alone", "read_group", t.ReadGroup, "err", err)
		} else {
			mode = 0o750
		}
	}
	if dir != d.paths.LogDir {
		return gid, gid >= 0 // a folder the admin chose: its mode is theirs
	}
	err := ownedFolder(dir, mode)
	if err == nil && gid >= 0 {
		err = os.Chown(dir, -1, gid)
	}
	if err != nil {
		d.log.Warn("cannot set who may read the log folder", "folder", dir, "err", err)
	}
	return gid, gid >= 0
}
