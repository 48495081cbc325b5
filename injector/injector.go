package injector

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/hookentry"
	"github.com/coworkbridge/coworkbridge/internal/cadence"
	"github.com/coworkbridge/coworkbridge/internal/fswatch"
	"github.com/coworkbridge/coworkbridge/internal/metronome"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/settingsschema"
)

// Recorder receives each session's state, for health. It is called from the injector's loop, so
// implementations must be quick and safe for concurrent use.
type Recorder interface {
	// SessionSeen: a live session exists at dir.
	SessionSeen(id, dir string)
	// SessionHooked: our current entry is in its settings. unverified: we wrote it for the first
	// time into a session whose CLI was already running, so it is unproven until an event arrives.
	SessionHooked(id string, unverified bool)
	// SessionUnhooked: our entry could not be put in place.
	SessionUnhooked(id string, err error)
	// SettingsRepaired: someone had removed or disabled our entry, and it was restored.
	SettingsRepaired(id string, what []string)
	// SessionTampered: something in the session tried to switch the guard off or hijack it (what
	// says how); the attempt has been undone where it could be.
	SessionTampered(id string, what []string)
	// SessionGone: the session folder went away or fell out of the live window.
	SessionGone(id string)
	// SessionChanged: something changed in a folder of the session the injector watches (a
	// file the CLI, the agent or a sync wrote), which other rescans of the session must look at
	// from their next one on.
	SessionChanged(id string)
	// Scanned reports each full pass over the sessions roots.
	Scanned(health.ScanReport)
}

// Options tunes an Injector; zero values take the defaults.
type Options struct {
	Logger   *slog.Logger
	Recorder Recorder
	Now      func() time.Time
	// Beat is the process's metronome: the periodic rescan ticks on it, in the same wake-ups as
	// the process's other periodic work. Nil: a beat of the injector's own.
	Beat *metronome.Metronome
	// LiveWindow: sessions active within it are kept hooked and watched. Default 24 h.
	LiveWindow time.Duration
	// MaxSessions bounds how many sessions one scan tracks. Default 5000.
	MaxSessions int
	// MaxWatches bounds the folders watched; past it, sessions rely on the rescan. Default 8192,
	// under macOS's per-process descriptor limit with room to spare (kqueue holds one per entry).
	MaxWatches int
	// MinFreeBytes: a sessions root whose volume has less free space is reported (hooks cannot
	// append there). Default 16 MiB.
	MinFreeBytes uint64
	// ChannelRoot holds the sessions' host channels (see session.ChannelDir); each hook command
	// names its own. Empty: no host channel, every hook uses the session's bridge folder.
	ChannelRoot string
	// Owned, when set (a user's worker in system mode), returns a check that says why a session
	// folder found is not its user's own (an alias of another user's, through a link planted
	// above a sessions root); such a session is never hooked or followed under that path, and is
	// reported. A rescan takes one check for all its sessions, which may remember the folders
	// above them it found owned; nothing keeps a check past its pass.
	Owned func() func(dir string) error
	// Removals records removals seen in sessions, shared with the collector: nothing is written
	// into a session while it is being removed. Default: the injector's own record.
	Removals *session.Removals
	// Watcher starts the file watcher; nil: fswatch.New. Tests pass a fake.
	Watcher func() (fswatch.Watcher, error)
	// settle delays a structural rescan after folder events, so one burst is one scan.
	settle time.Duration
}

func (o *Options) defaults() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Recorder == nil {
		o.Recorder = nopRecorder{}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.LiveWindow == 0 {
		o.LiveWindow = 24 * time.Hour
	}
	if o.MaxSessions == 0 {
		o.MaxSessions = 5000
	}
	if o.MaxWatches == 0 {
		o.MaxWatches = 8192
	}
	if o.MinFreeBytes == 0 {
		o.MinFreeBytes = 16 << 20
	}
	if o.Watcher == nil {
		o.Watcher = fswatch.New
	}
	if o.settle == 0 {
		o.settle = 50 * time.Millisecond
	}
	if o.Removals == nil {
		o.Removals = session.NewRemovals(o.Now)
	}
}

// Injector keeps our entry current in every live session under the configured roots.
type Injector struct {
	opts    Options
	log     *slog.Logger
	configs chan managedconfig.Config
	// ownedPass is the ownership check of the scan under way (see Options.Owned).
	ownedPass func(dir string) error
	// woken are the folders of sessions Stir was told of; wokenLost, that one did not fit.
	woken     chan string
	wokenLost atomic.Bool

	// Loop state, touched only by Run's goroutine.
	cfg   managedconfig.Config
	entry hookentry.Entry
	// gen counts configuration changes: a session found unchanged since a repair under another
	// configuration is merged again all the same.
	gen     uint64
	schema  *settingsschema.Schema
	w       fswatch.Watcher
	watched map[string]bool
	// nwatched mirrors len(watched) for readers outside the loop.
	nwatched atomic.Int64
	added    int // watches added since the scan began
	// fulls counts the full rescans, the table of watches being pruned at every cadence.FirstRest-th.
	fulls int
	live  map[string]*tracked // by session folder
	// pending are sessions whose settings.json vanished, or that a removal in progress held back:
	// ensured again once the removal has settled, unless the whole session went.
	pending map[string]bool
	// hold fires when the removals that held pending sessions back may be over; holdAt is when.
	hold   *time.Timer
	holdAt time.Time
	// missing: sessions whose settings.json (or, once hooked, our folder) was found missing, and
	// since when; one removal hold is waited out before anything is created.
	missing map[string]time.Time
	// forgotten: sessions dropped from tracking lately (folder gone, or half removed when a scan
	// looked): one that comes back within forgetMemory is repaired, never set up anew.
	forgotten map[string]time.Time
}

// forgetMemory is how long a forgotten session counts as hooked before.
const forgetMemory = time.Minute

type tracked struct {
	id     string
	hooked bool
	// repairs: when our entry had to be restored lately, to tell a session fighting the repair
	// from a one-off rewrite.
	repairs []time.Time
	// quiet: what the last repair read, looked at before it, when it found nothing to change
	// (under configuration quietGen); nil otherwise. A rescan that finds the same skips the
	// repair: reading and validating every unchanged settings file each rescan was most of
	// an idle daemon's work.
	quiet    []session.Stamp
	quietGen uint64
	// outputsWatched: the folders below outputs/ watched when last counted (see watchOutputs).
	outputsWatched int
	// cadence: the last full look (its watches and its repair) found the session watched whole
	// and its settings as they should be (calm), and no event has come from it since; it says
	// which full rescans pass it over. A new configuration stirs every session.
	cadence cadence.Schedule
	// mod is the session's ModTime as the last scan that looked at it found it.
	mod time.Time
}

// A session whose settings need our entry restored this many times within fightWindow is
// fighting the repair: a loop rewriting the file, racing the CLI's start.
const (
	fightRepairs = 3
	fightWindow  = 2 * time.Minute
)

// New returns an Injector for cfg; Run starts it.
func New(cfg managedconfig.Config, opts Options) (*Injector, error) {
	opts.defaults()
	e, err := hookentry.NewEntry(cfg, "")
	if err != nil {
		return nil, err
	}
	sc, err := settingsschema.New()
	if err != nil {
		return nil, err
	}
	return &Injector{schema: sc, w: fswatch.Nop(),
		opts: opts, log: opts.Logger, configs: make(chan managedconfig.Config, 1), woken: make(chan string, wokenMax),
		cfg: cfg, entry: e, watched: map[string]bool{}, live: map[string]*tracked{}, pending: map[string]bool{}, missing: map[string]time.Time{}, forgotten: map[string]time.Time{},
	}, nil
}

// SetConfig hands a new configuration to the running loop, which re-merges every live session
// (a mode change reaches running sessions without a restart). Only the latest one counts.
func (in *Injector) SetConfig(cfg managedconfig.Config) {
	for {
		select {
		case in.configs <- cfg:
			return
		default:
			select {
			case <-in.configs: // drop the stale one
			default:
			}
		}
	}
}

// Run hooks every live session, then follows the sessions roots until ctx is done. It returns
// nil on cancel; a watcher that cannot start is logged and the periodic rescan carries on alone.
func (in *Injector) Run(ctx context.Context) error {
	w, err := in.opts.Watcher()
	if err != nil {
		in.log.Warn("session watcher unavailable; relying on the periodic rescan", "err", err)
		w = fswatch.Nop()
	}
	in.w = w
	defer w.Close()
	in.hold = time.NewTimer(time.Hour) // before the first scan, which may hold sessions back
	in.hold.Stop()
	defer in.hold.Stop()
	in.rescan(true)
	ticker := in.opts.Beat.Ticker(in.cfg.RescanInterval)
	defer ticker.Stop()
	structural := fswatch.NewSettle(in.opts.settle)
	defer structural.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-w.Events():
			if in.handle(ev) {
				structural.Poke()
			}
		case err := <-w.Errors():
			in.eventsLost(err)
		case <-structural.C():
			in.rescan(false)
			in.flushPending()
		case <-in.hold.C:
			in.holdAt = time.Time{}
			in.flushPending()
		case <-ticker.C:
			in.rescan(true)
		case cfg := <-in.configs:
			in.reconfigure(cfg)
			ticker.Reset(cfg.RescanInterval)
		case dir := <-in.woken:
			in.wake(dir)
		}
	}
}

// wokenMax is how many woken sessions wait for the loop before Stir stirs every session instead.
const wokenMax = 256

// Stir tells the injector that something happened in the session at dir that its own watches
// may not have seen (the collector saw a call or a transcript line): its next full rescan looks
// at the session in full, calm or not. Safe from any goroutine; it never blocks.
func (in *Injector) Stir(dir string) {
	select {
	case in.woken <- dir:
	default:
		in.wokenLost.Store(true) // the next full rescan looks at every session
	}
}

// wake stirs the session at dir, if tracked.
func (in *Injector) wake(dir string) {
	if t := in.live[dir]; t != nil {
		t.cadence.Stir()
	}
}

// takeWoken stirs the sessions Stir was told of and the loop has not taken yet, before a full
// rescan: all of them if one did not fit.
func (in *Injector) takeWoken() {
	for {
		select {
		case dir := <-in.woken:
			in.wake(dir)
		default:
			if in.wokenLost.Swap(false) {
				for _, t := range in.live {
					t.cadence.Stir()
				}
			}
			return
		}
	}
}

// eventsLost looks at every session in full: the watcher lost events (its queue overflowed), and
// what they said is known only by looking.
func (in *Injector) eventsLost(err error) {
	in.log.Warn("session watcher error; rescanning", "err", err)
	for _, t := range in.live {
		t.cadence.Stir()
	}
	in.fulls = 0 // and the table of watches pruned of folders whose going was not told
	in.rescan(true)
}

func (in *Injector) reconfigure(cfg managedconfig.Config) {
	e, err := hookentry.NewEntry(cfg, "")
	if err != nil {
		in.log.Error("cannot build the hook for the new config; keeping the old one", "err", err)
		return
	}
	rootsChanged := !slices.Equal(cfg.SessionsRoots, in.cfg.SessionsRoots)
	in.cfg, in.entry = cfg, e
	in.gen++
	for _, t := range in.live {
		t.cadence.Stir() // its settings are looked at under the new configuration
	}
	if rootsChanged {
		for dir := range in.watched {
			in.unwatch(dir)
		}
		for dir, t := range in.live {
			in.opts.Recorder.SessionGone(t.id)
			delete(in.live, dir)
		}
	}
	in.log.Info("hook configuration changed; re-merging every live session", "mode", string(cfg.Mode))
	in.rescan(true)
}

// rescan walks the roots. A full rescan re-checks every live session's settings (the safety net
// behind the watcher); a structural one only takes in sessions not yet tracked.
func (in *Injector) rescan(full bool) {
	// A folder listed before its watch existed may have gained a session in between: while a
	// pass adds watches, look once more (bounded, in case folders keep appearing).
	for range 3 {
		in.added = 0
		in.scanOnce(full)
		if in.added == 0 {
			return
		}
		full = false
	}
}

func (in *Injector) scanOnce(full bool) {
	now := in.opts.Now()
	if in.opts.Owned != nil {
		in.ownedPass = in.opts.Owned()
		defer func() { in.ownedPass = nil }()
	}
	if full {
		in.takeWoken()
		// A folder's watch goes with it, and its event takes it out of the table; the prune is
		// for events lost (a lost event prunes at the next rescan), and for folders whose path
		// changed above them. A look at every watched folder each rescan was a tenth of what
		// idle sessions cost, and at every fourth still a thirtieth with 10,000 sessions: it
		// runs as often as a calm session's longest rest.
		if in.fulls%cadence.MaxRest == 0 {
			in.pruneWatches()
		}
		in.fulls++
	}
	sc := session.DiscoverKnown(in.cfg.SessionsRoots, in.opts.MaxSessions, func(dir string) (time.Time, bool) {
		// A calm session this scan passes over: its watches tell of any change to it.
		t := in.live[dir]
		if t == nil || !t.cadence.Resting() {
			return time.Time{}, false
		}
		return t.mod, true
	})
	for _, err := range sc.Errors {
		in.log.Warn("cannot read part of a sessions root", "err", err)
	}
	in.watchRoots(sc.MissingRoots)
	for _, f := range sc.Folders {
		in.watch(f)
	}
	for _, p := range sc.Pending {
		// A session being set up: its .claude may appear any moment, and the folder it appears
		// in must be watched for that to be seen before the next rescan.
		in.newSession(p)
	}
	report := health.ScanReport{Roots: in.cfg.SessionsRoots, Sessions: len(sc.Sessions), MissingRoots: sc.MissingRoots, Unrecognised: sc.Unrecognised, Truncated: sc.Truncated}
	rootOwned := in.rootsOwned(sc.MissingRoots)
	seen := make(map[string]bool, len(sc.Sessions))
	for _, f := range sc.Sessions {
		if now.Sub(f.ModTime) > in.opts.LiveWindow {
			continue // an old session; it comes back to life through its metadata or folder events
		}
		t, known := in.live[f.Dir]
		if full && known && rootOwned[f.Root] && t.cadence.Pass() {
			// Calm, and resting (package cadence): its watches and settings are as the last full
			// look left them. Stamping every session's settings and configuration folders and
			// walking its folders for watches at each rescan was a third of what an idle daemon
			// spent; the watches report any change, and the rescan at the end of the rest is the
			// net for what they missed. Its ownership needs no look of its own either (with
			// 10,000 sessions, one at every rescan was a twelfth of what the workers spent): a
			// link below its root is seen by the listing, which follows none, and only root can
			// give a folder to another user; a link planted above the root is what rootOwned
			// looked for.
			seen[f.Dir] = true
			report.Live++
			continue
		}
		if err := in.owned(f.Dir); err != nil {
			report.Unrecognised = append(report.Unrecognised, f.Dir+" ("+err.Error()+")")
			continue
		}
		seen[f.Dir] = true
		report.Live++
		whole := in.watchSessionTree(f.Dir, full || !known)
		if !whole {
			report.WatchLimited++
		}
		quiet := false
		if full || !known {
			quiet = in.ensure(f.Dir, f.ID, reasonScan)
		}
		if t := in.live[f.Dir]; t != nil && full {
			t.cadence.Looked(whole && quiet)
			t.mod = f.ModTime
		}
	}
	for dir, t := range in.live {
		if !seen[dir] {
			in.forget(dir, t)
		}
	}
	report.Watches = len(in.watched)
	for _, r := range in.cfg.SessionsRoots {
		if slices.Contains(sc.MissingRoots, r) {
			continue
		}
		if free, err := freeBytes(r); err == nil && free < in.opts.MinFreeBytes {
			report.LowSpace = append(report.LowSpace, fmt.Sprintf("%s (%d KiB free)", r, free>>10))
		}
	}
	in.opts.Recorder.Scanned(report)
}

// watchSession watches a session folder (for .claude to appear) and its .claude (for settings
// changes). It reports false when the watch limit left the session to the rescan.
func (in *Injector) watchSession(dir string) bool { return in.watchSessionTree(dir, true) }

// watchSessionTree is watchSession; without deep, the folders below outputs/ are not walked
// again (a structural rescan: their own events keep them watched, and the full rescan walks them).
// It reports whether every folder it looked for is watched: the session and its .claude, and
// where they exist outputs/, its .claude and the configuration folders within their bounds.
func (in *Injector) watchSessionTree(dir string, deep bool) (whole bool) {
	whole = in.watch(dir)
	whole = in.watch(filepath.Join(dir, session.ClaudeDir)) && whole
	// The project level, where it exists: an attempt there is undone at once, not at the rescan.
	outputs := filepath.Join(dir, "outputs")
	if fi, err := os.Lstat(outputs); err == nil && fi.IsDir() {
		whole = in.watch(outputs) && whole
		project := filepath.Join(dir, filepath.FromSlash(projectClaudeDir))
		whole = (in.watch(project) || !isFolder(project)) && whole
	}
	var nested []string
	if deep {
		nested = in.watchOutputs(dir)
	}
	if t := in.live[dir]; t != nil && t.outputsWatched >= maxOutputsWatches {
		whole = false // folders past the bound are left to the rescan
	}
	return in.watchSurface(dir, nested) && whole
}

// maxOutputsWatches bounds the folders watched below one session's outputs/; past it, a
// configuration unpacked deeper waits for the rescan. kqueue holds a descriptor per entry of a
// watched folder, so the bound is kept well below the session's share of MaxWatches.
const maxOutputsWatches = 48

// watchOutputs watches the folders below outputs/, breadth first, through real folders only and
// not into dependencies or git's own, so that a .claude folder or .mcp.json unpacked or cloned
// anywhere there is held as it appears rather than at the rescan (a skill there is loaded once
// the agent reads a file beside it). Each folder is watched before it is listed, so an entry
// made in between is seen either way. It returns the nested .claude folders it met.
func (in *Injector) watchOutputs(dir string) (nested []string) {
	outputs := filepath.Join(dir, "outputs")
	nested, n := in.watchTree(outputs, outputs, maxOutputsWatches)
	if t := in.live[dir]; t != nil {
		t.outputsWatched = n
	}
	return nested
}

// watchTree watches top and the folders below it, breadth first, at most budget of them, and
// returns the .claude folders it met (other than outputs') and how many folders it watched.
func (in *Injector) watchTree(outputs, top string, budget int) (nested []string, n int) {
	queue := []string{top}
	for len(queue) > 0 && n < budget {
		folder := queue[0]
		queue = queue[1:]
		if !in.watch(folder) {
			continue
		}
		n++
		entries, _ := readFolderN(folder, maxSurfaceEntries*4)
		for _, e := range entries {
			name := filepath.Join(folder, e.Name())
			switch {
			case !e.IsDir() || e.Type()&fs.ModeSymlink != 0:
			case e.Name() == session.ClaudeDir:
				if folder != outputs {
					nested = append(nested, name)
				}
			case holdsNoConfig(e.Name()):
			default:
				queue = append(queue, name)
			}
		}
	}
	return nested, n
}

// outputsFolderMade follows a folder made below outputs/ (a tar or git clone there makes many):
// its tree is watched within what is left of the session's bound, and a configuration found in
// it is held at once.
func (in *Injector) outputsFolderMade(p session.Place, name string) {
	t := in.live[p.Dir]
	if t == nil || t.outputsWatched >= maxOutputsWatches {
		return
	}
	for part := range strings.SplitSeq(p.Rel, "/") {
		if holdsNoConfig(part) {
			return
		}
	}
	outputs := filepath.Join(p.Dir, "outputs")
	nested, n := in.watchTree(outputs, name, maxOutputsWatches-t.outputsWatched)
	t.outputsWatched += n
	if len(nested) > 0 || hasMCPFile(name) {
		in.watchSurface(p.Dir, nested)
		in.ensure(p.Dir, p.ID(), reasonChange)
	}
}

// isFolder reports whether name is a folder, not a link to one.
func isFolder(name string) bool {
	fi, err := os.Lstat(name)
	return err == nil && fi.IsDir()
}

// hasMCPFile reports whether dir holds a .mcp.json.
func hasMCPFile(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, mcpFileName))
	return err == nil
}

// readFolderN is readFolder of at most n entries (all when n <= 0), in the order the file
// system gives them.
func readFolderN(dir string, n int) ([]fs.DirEntry, error) {
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(n)
}

// nestedEntry reports whether rel (a session-relative name) is a configuration a CLI started in a
// folder below outputs/ would load, or lies in one: a .claude folder other than the project
// level's, or a .mcp.json other than outputs/.mcp.json.
func nestedEntry(rel string) bool {
	rest, ok := strings.CutPrefix(rel, "outputs/")
	if !ok || !strings.Contains(rest, "/") {
		return false
	}
	for part := range strings.SplitSeq(rest, "/") {
		if part == session.ClaudeDir {
			return true
		}
	}
	return path.Base(rest) == mcpFileName
}

// maxSurfaceWatches bounds the configuration folders watched in one session; past it, a change
// there waits for the rescan.
const maxSurfaceWatches = 32

// watchSurface watches the configuration folders that exist in a session (skills and each skill,
// agents, commands and their sub-folders), so a file planted there by a helper program, not a
// judged call, is held at once rather than at the rescan. It reports whether it watched every
// one it found, within the depth it looks to.
func (in *Injector) watchSurface(dir string, nested []string) (whole bool) {
	n := 0
	whole = true
	var walk func(folder string, depth int)
	walk = func(folder string, depth int) {
		if n >= maxSurfaceWatches || depth > 2 {
			whole = whole && !isFolder(folder)
			return
		}
		// watch refuses a link at any step below the root, so the listing after it stays inside.
		if fi, err := os.Lstat(folder); err != nil || !fi.IsDir() {
			return
		}
		if !in.watch(folder) {
			whole = false
			return
		}
		n++
		entries, err := readFolder(folder)
		if err != nil {
			return
		}
		for _, e := range entries {
			if e.IsDir() && e.Type()&fs.ModeSymlink == 0 {
				walk(filepath.Join(folder, e.Name()), depth+1)
			}
		}
	}
	for _, level := range surfaceLevels {
		for _, k := range surfaceKinds {
			walk(filepath.Join(dir, filepath.FromSlash(level), k.dir), 0)
		}
	}
	for _, level := range nested {
		if !in.watch(level) {
			whole = false
			continue
		}
		for _, k := range surfaceKinds {
			walk(filepath.Join(level, k.dir), 0)
		}
	}
	return whole
}

// surfaceEntry reports whether rel (a session-relative name) is in a configuration folder of
// either level, or is one.
func surfaceEntry(rel string) bool {
	for _, level := range surfaceLevels {
		rest, ok := strings.CutPrefix(rel, level+"/")
		if !ok {
			continue
		}
		first, _, _ := strings.Cut(rest, "/")
		if surfaceWhole[first] != "" || first == pluginsDir || isKindDir(first) {
			return true
		}
	}
	return false
}

// watchRoots watches each missing root's nearest existing ancestor, to notice it being created.
func (in *Injector) watchRoots(missing []string) {
	for _, r := range in.cfg.SessionsRoots {
		if !slices.Contains(missing, r) {
			in.watch(r)
			continue
		}
		for p := filepath.Dir(r); ; p = filepath.Dir(p) {
			if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
				in.watch(p)
				break
			}
			if p == filepath.Dir(p) {
				break
			}
		}
	}
}

func (in *Injector) watch(dir string) bool {
	if in.watched[dir] {
		return true
	}
	if len(in.watched) >= in.opts.MaxWatches {
		return false
	}
	if _, err := os.Lstat(dir); err != nil {
		// Most folders asked for are not there (a session's skills, agents, commands...): one
		// look says so, where the walk below looked at every step first, at every rescan.
		return false
	}
	add := in.w.Add // a root, or a folder above one: the admin's, trusted
	if p, ok := session.Locate(in.cfg.SessionsRoots, dir); ok {
		// Below a root a link at any step is refused, never watched through, even one
		// swapped in while the watch is added.
		add = func(dir string) error { _, err := fswatch.AddInside(in.w, p.Root, dir); return err }
	}
	if err := add(dir); err != nil {
		in.log.Debug("cannot watch folder", "dir", dir, "err", err)
		return false
	}
	in.watched[dir] = true
	in.nwatched.Store(int64(len(in.watched)))
	in.added++
	return true
}

func (in *Injector) unwatch(dir string) {
	if in.watched[dir] {
		delete(in.watched, dir)
		in.nwatched.Store(int64(len(in.watched)))
		_ = in.w.Remove(dir) // fails harmlessly when the folder is already gone
	}
}

// pruneWatches drops the watches of folders that are gone: the kernel dropped them already, and a
// table that kept them would fill up with every deleted session tree's account and org folders.
func (in *Injector) pruneWatches() {
	for dir := range in.watched {
		if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
			in.unwatch(dir)
		}
	}
}

func (in *Injector) forget(dir string, t *tracked) {
	delete(in.missing, dir)
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		in.opts.Removals.Forget(dir) // a session of the same name later is another session
	}
	now := in.opts.Now()
	if t.hooked {
		in.forgotten[dir] = now
	}
	for d, at := range in.forgotten {
		if now.Sub(at) > forgetMemory {
			delete(in.forgotten, d)
		}
	}
	for d := range in.watched {
		if strings.HasPrefix(d, dir+string(filepath.Separator)) {
			in.unwatch(d) // .claude, outputs and the configuration folders below them
		}
	}
	in.unwatch(dir)
	delete(in.live, dir)
	in.opts.Recorder.SessionGone(t.id)
}

// handle acts on one watcher event and reports whether the tree's structure may have changed.
func (in *Injector) handle(ev fswatch.Event) bool {
	if ev.Op == fswatch.Chmod {
		return false
	}
	name := filepath.Clean(ev.Name)
	if (ev.Has(fswatch.Remove) || ev.Has(fswatch.Rename)) && in.watched[name] {
		in.unwatch(name) // its watch went with it
	}
	in.noteRemoval(name, ev)
	base := filepath.Base(name)
	p, ok := session.Locate(in.cfg.SessionsRoots, name)
	if t := in.live[p.Dir]; ok && t != nil && p.Level >= session.LevelSession {
		t.cadence.Stir() // looked at in full from the next rescan on
		in.opts.Recorder.SessionChanged(t.id)
	}
	if !ok {
		// A missing root, or one of its ancestors, appeared: the root may exist now. (The root
		// itself matters most: on a Mac where the Claude app ran before Cowork did, its parent
		// exists and is the folder watched.)
		return slices.ContainsFunc(in.cfg.SessionsRoots, func(root string) bool {
			root = filepath.Clean(root)
			return root == name || strings.HasPrefix(root, name+string(filepath.Separator))
		})
	}
	switch {
	case p.Level < session.LevelSession:
		return !strings.HasPrefix(base, ".")
	case p.Metadata:
		// local_<uuid>.json changed: Cowork touched the session's metadata, a sign of life.
		_, known := in.live[p.Dir]
		return !known
	case p.Level == session.LevelSession:
		if ev.Has(fswatch.Create) && p.IsSession() {
			// A new session folder: watch it now rather than after a rescan, so that its .claude
			// is seen the moment it appears.
			in.newSession(p.Dir)
			return false
		}
		return !strings.HasPrefix(base, ".")
	case p.Rel == "outputs" && ev.Has(fswatch.Create), p.Rel == "outputs/"+session.ClaudeDir,
		strings.HasPrefix(p.Rel, "outputs/"+session.ClaudeDir+"/settings") && strings.Count(p.Rel, "/") == 2,
		(p.Rel == ProjectMCPFile || p.Rel == StateFile) && !ev.Has(fswatch.Remove):
		if _, known := in.live[p.Dir]; known {
			in.watchSession(p.Dir)
			in.ensure(p.Dir, p.ID(), reasonChange)
		}
	case strings.HasPrefix(p.Rel, "outputs/") && ev.Has(fswatch.Create) && !nestedEntry(p.Rel) && !surfaceEntry(p.Rel) && isFolder(name):
		in.outputsFolderMade(p, name)
	case (surfaceEntry(p.Rel) || nestedEntry(p.Rel)) && !ev.Has(fswatch.Remove):
		if _, known := in.live[p.Dir]; known {
			in.watchSession(p.Dir)
			in.ensure(p.Dir, p.ID(), reasonChange)
		}
	case p.Rel == session.ClaudeDir:
		if ev.Has(fswatch.Create) {
			in.watchSession(p.Dir)
			in.ensure(p.Dir, p.ID(), reasonNew)
		}
	case p.Rel == session.SettingsFile:
		in.ensure(p.Dir, p.ID(), reasonChange)
		// Gone: ensure holds the session back while a removal may be under way (once, for the
		// removals the agent can make); a rescan soon tells whether the whole session went.
		return ev.Has(fswatch.Remove) || ev.Has(fswatch.Rename)
	}
	return false
}

// noteRemoval records a removal inside a session. Renames count only where the agent cannot make
// them (the session folder and its own entries, moved to the Trash): the CLI and coworkbridge
// itself save files by renaming a temporary file over them all the time.
func (in *Injector) noteRemoval(name string, ev fswatch.Event) {
	if !ev.Has(fswatch.Remove) && !ev.Has(fswatch.Rename) {
		return
	}
	p, ok := session.Locate(in.cfg.SessionsRoots, name)
	switch {
	case !ok || p.Level < session.LevelSession:
	case p.Metadata:
		in.opts.Removals.Saw(p.Dir, session.MetadataName)
	case !strings.Contains(p.Rel, "/") || ev.Has(fswatch.Remove) && session.RemovalSign(p.Rel):
		in.opts.Removals.Saw(p.Dir, p.Rel)
	}
}

func (in *Injector) newSession(dir string) {
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() || in.owned(dir) != nil {
		return // a link, another user's through a link, or already gone: the rescan reports it
	}
	in.watch(dir) // before looking for .claude, so that its creation cannot slip between the two
	if fi, err := os.Lstat(filepath.Join(dir, session.ClaudeDir)); err == nil && fi.IsDir() {
		in.watchSession(dir)
		in.ensure(dir, filepath.Base(dir), reasonNew)
	}
}

// owned is Options.Owned's word on dir, by the check of the pass under way if there is one;
// nil without it.
func (in *Injector) owned(dir string) error {
	switch {
	case in.opts.Owned == nil:
		return nil
	case in.ownedPass != nil:
		return in.ownedPass(dir)
	}
	return in.opts.Owned()(dir)
}

// rootsOwned says which sessions roots the ownership check finds real folders of the user's,
// every folder down to them from the home: a session below one that is not is asked about in
// its own right at every rescan, calm or not, and refused.
func (in *Injector) rootsOwned(missing []string) map[string]bool {
	owned := make(map[string]bool, len(in.cfg.SessionsRoots))
	for _, r := range in.cfg.SessionsRoots {
		owned[r] = !slices.Contains(missing, r) && in.owned(r) == nil
	}
	return owned
}

// flushPending looks again at the sessions held back; ensure holds again those still waiting.
func (in *Injector) flushPending() {
	dirs := slices.Collect(maps.Keys(in.pending))
	clear(in.pending)
	for _, dir := range dirs {
		if fi, err := os.Lstat(filepath.Join(dir, session.ClaudeDir)); err == nil && fi.IsDir() {
			in.ensure(dir, filepath.Base(dir), reasonChange)
		}
	}
}

// justVanished reports whether settings.json (and, in a hooked session, our folder) is missing
// for the first time: the first sign of a removal whose events have not reached us yet (the
// event of our own earlier write can come first, or a rescan can find a session half removed).
// Cowork creates settings.json as it sets a session up, so nothing is lost by waiting: the
// session is held back once, for RemovalQuiet, before anything is created.
func (in *Injector) justVanished(dir string) bool {
	if _, held := in.missing[dir]; held {
		return false // held once already: create them (the entry goes once they are)
	}
	in.missing[dir] = in.opts.Now()
	in.opts.Removals.Saw(dir, session.SettingsFile)
	return in.heldBack(dir)
}

// gone reports whether settings.json, or in a hooked session our folder, is missing: what a
// removal of the session takes first, and what only a creation could bring back.
func gone(dir string, hooked bool) bool {
	names := []string{session.SettingsFile}
	if hooked {
		names = append(names, session.BridgeDir)
	}
	for _, name := range names {
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(name))); errors.Is(err, fs.ErrNotExist) {
			return true
		}
	}
	return false
}

// heldBack reports whether a removal is going on in the session; if so the session is pending
// and the hold timer set to look again when it may be over.
func (in *Injector) heldBack(dir string) bool {
	wait := in.opts.Removals.Wait(dir)
	if wait <= 0 {
		return false
	}
	in.pending[dir] = true
	if at := time.Now().Add(wait); in.hold != nil && (in.holdAt.IsZero() || at.Before(in.holdAt)) {
		in.hold.Reset(wait)
		in.holdAt = at
	}
	return true
}

type reason int

const (
	reasonScan   reason = iota // a rescan or a config change
	reasonNew                  // a new .claude appeared
	reasonChange               // settings.json changed under us
)

// ensure puts our entry into one session and reports the result; quiet, that it found the
// session's settings as they should be and changed nothing.
func (in *Injector) ensure(dir, id string, why reason) (quiet bool) {
	rec := in.opts.Recorder
	t := in.live[dir]
	at, wasHooked := in.forgotten[dir]
	wasHooked = wasHooked && in.opts.Now().Sub(at) < forgetMemory
	if !gone(dir, t != nil && t.hooked || wasHooked) {
		delete(in.missing, dir) // a repair swaps files in place and never waits (see writeSettings)
	} else if in.heldBack(dir) || in.justVanished(dir) {
		// Creating them now could undo a removal in progress; if it is an attack instead, the
		// hold is bounded (session.RemovalHold, once per session). Before SessionSeen: the
		// collector would make its folder in the session.
		return false
	}
	if t == nil {
		t = &tracked{id: id}
		in.live[dir] = t
		rec.SessionSeen(id, dir)
	}
	s, err := session.Open(dir)
	if err == nil {
		_, bridgeErr := os.Lstat(filepath.Join(dir, filepath.FromSlash(session.BridgeDir)))
		repair := (t.hooked || wasHooked || bridgeErr == nil) && in.missing[dir].IsZero() // set up before: repair only
		// One look at each folder for the stamps (the repair after them looks again as it goes):
		// each stamp looked at every folder above its file, a dozen looks for one answer.
		release := s.Hold()
		before := repairInputs(s)
		release()
		if repair && why == reasonScan && t.quiet != nil && t.quietGen == in.gen && slices.Equal(before, t.quiet) {
			s.Close()
			in.report(t, Outcome{}, why) // what the repair found last time
			return true
		}
		t.quiet = nil
		var out Outcome
		var e hookentry.Entry
		// The entry is made only for a repair that reads: its script, per session in system
		// mode, was a twentieth of what an idle session cost at each rescan.
		if e, err = in.entryFor(id); err == nil {
			if repair {
				out, err = Repair(s, e, in.schema, in.opts.Now())
			} else {
				out, err = Ensure(s, e, in.schema, in.opts.Now())
			}
			if err == nil && repair && out.quiet() {
				t.quiet, t.quietGen = before, in.gen
			}
		}
		s.Close()
		if err == nil {
			delete(in.missing, dir)
			in.report(t, out, why)
			return t.quiet != nil
		}
		// What was held before the failure stays held, and an attempt among it is recorded
		// now: the next pass finds the plant gone and would never know it was there.
		in.recordActs(t, out, why)
		if errors.Is(err, ErrVanished) {
			// Gone between the look and the read: the same first sign of a removal.
			in.missing[dir] = in.opts.Now()
			in.opts.Removals.Saw(dir, session.SettingsFile)
			in.heldBack(dir)
			return false
		}
	}
	if errors.Is(err, os.ErrNotExist) {
		return false // the session is going away; the next scan forgets it
	}
	t.hooked = false
	in.log.Warn("cannot hook session", "code", health.CodeSessionUnhooked, "session", id, "err", err)
	rec.SessionUnhooked(id, err)
	return false
}

// entryFor is the entry for one session: the configuration's, naming the session's host channel.
func (in *Injector) entryFor(id string) (hookentry.Entry, error) {
	if in.opts.ChannelRoot == "" {
		return in.entry, nil
	}
	return hookentry.NewEntry(in.cfg, filepath.Join(session.ChannelDir(in.opts.ChannelRoot, id), filepath.FromSlash(session.BridgeDir)))
}

func (in *Injector) report(t *tracked, out Outcome, why reason) {
	in.recordActs(t, out, why)
	unverified := out.Wrote && out.Merge.Added && out.Running && !t.hooked
	if out.Wrote {
		in.log.Info("session hooked", "session", t.id, "mode", string(in.entry.Mode), "unverified", unverified)
	}
	t.hooked = true
	in.opts.Recorder.SessionHooked(t.id, unverified)
}

// recordActs logs and records what a pass repaired and what of it only an attempt on the guard
// explains, whether or not the pass went on to hook the session.
func (in *Injector) recordActs(t *tracked, out Outcome, why reason) {
	repairs := out.Repairs()
	if t.hooked && out.Merge.Added {
		repairs = append(repairs, "restored our removed entry")
	}
	if why == reasonScan && !out.Merge.DisabledAllHooks && !out.ReplacedLink && out.SetAside == "" && !out.Merge.Added {
		repairs = nil // replacing our previous variant after a config change is not a repair
	}
	if len(repairs) > 0 {
		in.log.Warn("session settings repaired", "code", health.CodeSettingsRepaired, "session", t.id, "repairs", repairs)
		in.opts.Recorder.SettingsRepaired(t.id, repairs)
	}
	tampering := out.Tampering()
	if len(repairs) > 0 && t.hooked {
		now := in.opts.Now()
		t.repairs = append(slices.DeleteFunc(t.repairs, func(at time.Time) bool { return now.Sub(at) > fightWindow }), now)
		if len(t.repairs) >= fightRepairs {
			tampering = append(tampering, fmt.Sprintf("its settings were rewritten %d times in %v, fighting the repair", len(t.repairs), fightWindow))
		}
	}
	if len(tampering) > 0 {
		in.log.Warn("attempt on the guard in a session", "code", health.CodeSessionTampered, "session", t.id, "what", tampering)
		in.opts.Recorder.SessionTampered(t.id, tampering)
	}
}

// Watches is the number of folders currently watched, for health; safe from any goroutine.
func (in *Injector) Watches() int { return int(in.nwatched.Load()) }

// UnhookAll removes our entries from every session under roots, for when an admin switches
// coworkbridge off. It returns how many sessions it changed; errors are logged per session.
func UnhookAll(roots []string, log *slog.Logger) int {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	changed := 0
	sc := session.Discover(roots, 1<<20)
	for _, f := range sc.Sessions {
		n, err := unhook(f.Dir)
		if err != nil {
			log.Warn("cannot remove our hook from a session", "session", f.ID, "err", err)
		}
		changed += n
	}
	return changed
}

func unhook(dir string) (int, error) {
	s, err := session.Open(dir)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	data, err := s.ReadFile(session.SettingsFile, maxSettingsBytes)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	out, changed, err := hookentry.Strip(data)
	if err != nil || !changed {
		return 0, err
	}
	fi, err := s.Lstat(session.SettingsFile)
	if err != nil {
		return 0, err
	}
	if err := s.WriteFile(session.SettingsFile, out, fi.Mode().Perm()); err != nil {
		return 0, fmt.Errorf("write %s: %w", session.SettingsFile, err)
	}
	return 1, nil
}

type nopRecorder struct{}

func (nopRecorder) SessionSeen(string, string)        {}
func (nopRecorder) SessionHooked(string, bool)        {}
func (nopRecorder) SessionUnhooked(string, error)     {}
func (nopRecorder) SettingsRepaired(string, []string) {}
func (nopRecorder) SessionTampered(string, []string)  {}
func (nopRecorder) SessionGone(string)                {}
func (nopRecorder) SessionChanged(string)             {}
func (nopRecorder) Scanned(health.ScanReport)         {}

// readFolder lists a folder of a session: never through a link, and never opening a FIFO swapped
// in since the look (an open that would block the injector until a writer came).
func readFolder(dir string) ([]fs.DirEntry, error) {
	entries, err := readFolderN(dir, -1)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}
