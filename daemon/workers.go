package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/dropin"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/privsep"
	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// rootSide is what root does for the workers of system mode (privsep.Root): it judges, writes
// the records stamped with the worker's user, and counts. It touches no file of a user's: a
// call's links were followed by the worker, as the user.
type rootSide struct {
	d *Daemon
	// owners are the sessions each worker reported, by id: one worker's notes about another
	// user's session are dropped.
	mu     sync.Mutex
	owners map[string]uint32
}

var _ privsep.Root = (*rootSide)(nil)

// policyOf is u's policy under the configuration in force, as u's home makes it (the same the
// socket judges u's host calls by); its judge follows no link: the worker did, as u.
func (d *Daemon) policyOf(u privsep.User) (judgement.Judge, *classifier.Classifier, error) {
	sv := d.workerPolicy.Load()
	if sv == nil {
		return judgement.Judge{}, nil, errors.New("no configuration is in force in the daemon")
	}
	return d.callers.Policy(u.UID, *sv)
}

// asUser is c as root knows it: the user the worker runs as, not what the worker said.
func (r *rootSide) asUser(u privsep.User, c judgement.Call) judgement.Call {
	c.User, c.Host, c.RecordUser = u.Name, r.d.stamp.Host, true
	return c
}

// unjudged is the judge of a call no policy can be had for: refusals only, in enforce.
var unjudged = judgement.Judge{Cfg: managedconfig.Config{Mode: managedconfig.Enforce}}

func (r *rootSide) Decide(ctx context.Context, u privsep.User, c judgement.Call) judgement.Outcome {
	c = r.asUser(u, c)
	j, _, err := r.d.policyOf(u)
	if err != nil {
		return unjudged.Refuse(c, ruleid.ClassifierError, "coworkbridge has no policy for "+u.Name+" ("+err.Error()+")")
	}
	return j.Decide(ctx, c)
}

func (r *rootSide) Refuse(u privsep.User, c judgement.Call, rule, reason string) judgement.Outcome {
	c = r.asUser(u, c)
	j, _, err := r.d.policyOf(u)
	if err != nil {
		return unjudged.Refuse(c, rule, reason)
	}
	return j.Refuse(c, rule, reason)
}

func (r *rootSide) InstructionFindings(u privsep.User, text string) []classifier.Verdict {
	if _, cls, err := r.d.policyOf(u); err == nil {
		return cls.InstructionFindings(text)
	}
	return nil
}

// Record writes a worker's records, each naming the worker's user whatever it said.
func (r *rootSide) Record(u privsep.User, recs []telemetry.Record, sync bool) error {
	g := r.d.watching.Load()
	if g == nil {
		return errors.New("the daemon is not guarding sessions now; the records stay in the spools")
	}
	for i := range recs {
		recs[i].User = u.Name
	}
	if len(recs) > 0 {
		if err := g.log.WriteBatch(recs); err != nil {
			return err
		}
	}
	if sync {
		return g.log.Sync()
	}
	return nil
}

// Health counts what a worker saw, for the sessions it reported only.
func (r *rootSide) Health(u privsep.User, n privsep.HealthNote) {
	h := r.d.health
	if !r.owns(u, n) {
		return
	}
	switch n.Op {
	case "session_seen":
		h.SessionSeen(n.ID, n.Dir)
	case "session_hooked":
		h.SessionHooked(n.ID, n.Unverified)
	case "session_unhooked":
		h.SessionUnhooked(n.ID, errors.New(n.Reason))
	case "session_gone":
		h.SessionGone(n.ID)
		r.mu.Lock()
		delete(r.owners, n.ID)
		r.mu.Unlock()
	case "scanned":
		if n.Scan != nil {
			h.ScannedBy(scanSource(u), *n.Scan)
		}
	case "event":
		h.Event(n.ID, n.Decision, n.Latency)
	case "quarantined":
		h.Quarantined(n.ID, n.Reason, n.Until)
	case "instruction_findings":
		h.InstructionFindings(n.ID, n.Files)
	case "instruction_files":
		h.InstructionFiles(n.ID, n.Names)
	case "cli_version":
		h.CLIVersion(n.ID, n.Reason)
	case "count":
		if n.Code.Known() && n.N > 0 {
			h.CountN(n.ID, n.Code, n.N)
		}
	}
}

// scanSource names u's worker's rescans in health: by uid, so that a user renamed has one.
func scanSource(u privsep.User) string { return "uid " + strconv.FormatUint(uint64(u.UID), 10) }

// Forget forgets what u's workers reported: their rescans, which status and health.json would
// go on adding up, and their sessions, marked gone until a worker of u's sees them again.
func (r *rootSide) Forget(u privsep.User) {
	r.d.health.ScanGone(scanSource(u))
	r.mu.Lock()
	var ids []string
	for id, uid := range r.owners {
		if uid == u.UID {
			ids = append(ids, id)
			delete(r.owners, id)
		}
	}
	r.mu.Unlock()
	for _, id := range ids {
		r.d.health.SessionGone(id)
	}
}

// owns reports whether n is about a session of u's: a session is u's once u's worker reports
// it seen in a folder of u's own, and stays so until it is gone.
func (r *rootSide) owns(u privsep.User, n privsep.HealthNote) bool {
	if n.ID == "" {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.owners == nil {
		r.owners = map[string]uint32{}
	}
	uid, known := r.owners[n.ID]
	if n.Op == "session_seen" {
		if known && uid != u.UID || !r.d.servedFor(u, n.Dir) {
			r.d.log.Warn("a worker reported a session that is not its user's; ignored", "user", u.Name, "session", n.ID, "dir", n.Dir)
			return false
		}
		r.owners[n.ID] = u.UID
		return true
	}
	return known && uid == u.UID
}

// servedFor reports whether dir is under one of the sessions roots u's worker was given.
func (d *Daemon) servedFor(u privsep.User, dir string) bool {
	for _, root := range d.rootsOf(u) {
		if strings.HasPrefix(dir, root+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// Log writes a line of a worker's log in the daemon's, under its user's name.
func (r *rootSide) Log(u privsep.User, level slog.Level, msg string, attrs map[string]any) {
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	args := []any{"worker_user", u.Name}
	for _, k := range keys {
		if k == "worker_user" {
			continue
		}
		args = append(args, k, attrs[k])
	}
	r.d.log.Log(context.Background(), level, msg, args...)
}

// rootsOf is u's sessions roots under the configuration in force: those under u's home, and
// those outside every home whose folder u owns (root looks at the name the admin gave, never
// below it). A root outside every home owned by root is served by nobody: root does no
// session's file work.
func (d *Daemon) rootsOf(u privsep.User) []string {
	sv := d.workerPolicy.Load()
	if sv == nil {
		return nil
	}
	cfg := sv.Snap.Config
	roots := cfg.RootsOf(u.Home)
	homes := d.homesFresh()
	for _, r := range cfg.SessionsRoots {
		if slices.Contains(roots, r) || underAHome(homes, r) {
			continue
		}
		fi, err := os.Lstat(r)
		if err != nil || !fi.IsDir() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid == u.UID {
			roots = append(roots, r)
		}
	}
	return roots
}

// underAHome reports whether dir is inside one of the homes.
func underAHome(homes []string, dir string) bool {
	for _, h := range homes {
		if strings.HasPrefix(dir, h+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// homesFor is how long a listing of the served people's homes is used before it is made again.
// Listing them reads the user database for every user and their groups; it was done for each
// session a worker reported, and with a hundred users of a hundred sessions it took nine tenths
// of the daemon's time. A user added since is a home not yet known: a sessions root there is
// given meanwhile to the user who owns it, which is that user.
const homesFor = 10 * time.Second

// homesFresh are the homes of the people served, listed at most homesFor ago.
func (d *Daemon) homesFresh() []string {
	d.homesMu.Lock()
	defer d.homesMu.Unlock()
	if now := d.now(); d.homesOf == nil || now.Sub(d.homesAt) >= homesFor || now.Before(d.homesAt) {
		us, err := d.users()
		if err != nil {
			return nil // not kept: the next call lists them again
		}
		d.homesOf, d.homesAt = make([]string, len(us)), now
		for i, u := range us {
			d.homesOf[i] = u.Home
		}
	}
	return d.homesOf
}

// setupFor is what each worker is told under cfg: guard its user's roots (on), or stop and,
// with unhook, take our hooks out of them.
func (d *Daemon) setupFor(on, unhook bool, t workerTuning) func(privsep.User) privsep.Setup {
	host := d.stamp.Host
	return func(u privsep.User) privsep.Setup {
		st := privsep.Setup{On: on, Unhook: unhook, Host: host, User: u.Name, DropIn: filepath.Join(d.dropDir, dropin.Name),
			BudgetRecords: t.budget, ForgedAfter: t.forgedAfter, SpoolPoll: t.poll}
		j, cls, err := d.policyOf(u)
		if err != nil {
			d.log.Error("cannot work out a user's policy; their worker is told to stand by", "user", u.Name, "err", err)
			st.On = false
			return st
		}
		st.Config = j.Cfg
		st.Config.SessionsRoots, st.Config.HomeRoots = d.rootsOf(u), nil
		st.Places[0], st.Places[1], st.Places[2] = cls.PlacePaths()
		st.Secrets = cls.SecretFolders()
		return st
	}
}

// workerTuning is the tests' overrides the daemon was started with, for its workers.
type workerTuning struct {
	budget            int
	forgedAfter, poll time.Duration
}

// newSupervisor is the workers of system mode for the guard being built.
func (d *Daemon) newSupervisor(cfg managedconfig.Config) (*privsep.Supervisor, error) {
	if d.exe == "" {
		return nil, fmt.Errorf("system mode: cannot tell which program to start the users' workers with")
	}
	return &privsep.Supervisor{Exe: d.exe, Root: &rootSide{d: d}, Users: d.users, Rescan: cfg.RescanInterval, Beat: d.metro, WorkerEnv: d.workerEnv,
		Log: d.log.With("component", "workers"), Health: d.health, MaxFrame: privsep.FrameFor(cfg.MaxLineBytes),
		Recorded: func(privsep.User) []string { return d.recorded(cfg.Telemetry.Path) }}, nil
}

// recorded is the request ids at the end of the decision log, for a worker starting.
func (d *Daemon) recorded(path string) []string {
	m, err := telemetry.RecentRIDs(path, recentLogBytes)
	if err != nil {
		d.log.Warn("cannot read the end of the decision log; events replayed after a worker's crash may be recorded twice", "err", err)
	}
	out := make([]string, 0, len(m))
	for rid := range m {
		out = append(out, rid)
	}
	return out
}
