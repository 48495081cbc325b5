package hosthook

import (
	"context"
	"fmt"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/internal/realpath"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/policy"
	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// Callers is the socket door of a system-mode daemon: it judges each caller's host call under
// the policy as the caller's own home makes it (their protected places, their sessions roots),
// compiled once per configuration and kept per uid with its places' identities. The kernel's
// word names the caller; the request's CLAUDE_CONFIG_DIR is the caller's to say, so it can only
// name a session under the caller's own roots. It writes nothing: the record goes back to the
// daemon, which writes it.
type Callers struct {
	// Env and Paths are the daemon's (system mode): the platform, the overrides, managed.json,
	// and the host channels' root.
	Env   managedconfig.Env
	Paths managedconfig.Paths
	// View, when set, asks the user uid's worker, once per call, what it sees of the call (see
	// Judgement.View): where the Mac's links take its paths as the user, so that root follows no
	// link of a user's itself, and the quarantine and flow of its session (id "": none).
	View func(uid uint32, p claudehook.Payload, session string) View
	// MaxRequest is the most a request may hold, for the reason Oversized gives.
	MaxRequest int64
	// Lookup names a uid (nil: the system's user database).
	Lookup func(uid uint32) (*user.User, error)

	mu    sync.Mutex
	users map[uint32]*caller
}

// Serving is the configuration calls are judged under now.
type Serving struct {
	Snap managedconfig.Snapshot
	// Failing: a broken file meant enforce, so every call is denied.
	Failing bool
	Stamp   telemetry.Stamp
}

// caller is one uid's policy under the configuration it was made under.
type caller struct {
	hash, name, home string
	cfg              managedconfig.Config
	judge            judgement.Judge
	cls              *classifier.Classifier
}

// identitiesFor is how long a caller's protected places are known by the identities taken: a
// place made since is known by its identity within that time.
const identitiesFor = 10 * time.Second

// Answer judges the call r of the caller uid and returns what its hook prints and the record to
// write (nil: the session's own hook reports the call, so nothing is recorded here).
func (c *Callers) Answer(ctx context.Context, uid uint32, r Request, sv Serving, started time.Time) (out []byte, rec *telemetry.Record, err error) {
	cl, err := c.callerOf(uid, sv)
	if err != nil {
		return nil, nil, err
	}
	// Nothing a user can write makes this door stand aside for a session's own hook, nor does
	// root read the session to decide: without lockdown a host-loop call of a Cowork session is
	// judged here and by the session's hook both (lockdown makes it here only). What the
	// session's state is, root asks the caller's own worker, which follows no other user's.
	note := ""
	env := managedconfig.Env{GOOS: c.Env.GOOS, Home: cl.home, Getenv: func(k string) string {
		switch k {
		case "CLAUDE_CONFIG_DIR":
			return r.ConfigDir
		case "CLAUDE_CODE_HOST_SESSION_ID":
			return r.HostSession
		}
		return ""
	}}
	stamp := sv.Stamp
	stamp.User = cl.name
	j := Judgement{Judge: cl.judge, Env: env, ChannelRoot: c.Paths.ChannelRoot(), Stamp: stamp, Door: judgement.Socket, Note: note}
	if c.View != nil {
		j.View = func(p claudehook.Payload, session string) View { return c.View(uid, p, session) }
	}
	rec, out = j.Decide(ctx, r.Payload, started)
	return out, rec, nil
}

// Oversized refuses a call of the caller uid larger than the socket takes (MaxRequest), left
// unread: denied in enforce, and recorded under the caller.
func (c *Callers) Oversized(_ context.Context, uid uint32, _ Request, sv Serving, started time.Time) ([]byte, *telemetry.Record, error) {
	cl, err := c.callerOf(uid, sv)
	if err != nil {
		return nil, nil, err
	}
	call := judgement.Call{Door: judgement.Socket, RID: newRID(), Waiting: true, User: cl.name, Host: sv.Stamp.Host, RecordUser: true, Started: started}
	reason := fmt.Sprintf("this tool call was blocked because its data (more than %d bytes) is larger than coworkbridge takes from a hook; it was not read", c.MaxRequest)
	o := cl.judge.Refuse(call, ruleid.Oversized, reason)
	rec := o.Record
	rec.User = cl.name
	return o.Output(), &rec, nil
}

// Policy is uid's policy under sv, as their own home makes it (their protected places, their
// sessions roots): what the system daemon judges their worker's calls by.
func (c *Callers) Policy(uid uint32, sv Serving) (judgement.Judge, *classifier.Classifier, error) {
	cl, err := c.callerOf(uid, sv)
	if err != nil {
		return judgement.Judge{}, nil, err
	}
	return cl.judge, cl.cls, nil
}

// callerOf is uid's policy under the configuration in force, compiled once per change.
func (c *Callers) callerOf(uid uint32, sv Serving) (*caller, error) {
	hash := sv.Snap.ShortHash()
	c.mu.Lock()
	cl := c.users[uid]
	c.mu.Unlock()
	if cl != nil && cl.hash == hash {
		return cl, nil
	}
	lookup := c.Lookup
	if lookup == nil {
		lookup = func(uid uint32) (*user.User, error) { return user.LookupId(strconv.FormatUint(uint64(uid), 10)) }
	}
	u, err := lookup(uid)
	if err != nil {
		return nil, fmt.Errorf("who is uid %d: %w", uid, err)
	}
	env := c.Env
	env.System, env.Homes, env.Home = false, nil, u.HomeDir
	snap := managedconfig.NewLoader(env, c.Paths).Load()
	cl = &caller{hash: hash, name: u.Username, home: u.HomeDir, cfg: snap.Config}
	var cls *classifier.Classifier
	switch {
	case sv.Failing || snap.Origin == managedconfig.OriginInvalid:
		cl.cfg.CoworkEnabled, cl.cfg.Mode = true, managedconfig.Enforce
		cls, err = policy.DenyAll()
	default:
		cls, err = policy.Compile(snap.Config.Policy)
	}
	if err != nil && cls == nil {
		return nil, fmt.Errorf("compile the policy for %s: %w", u.Username, err)
	}
	places := &realpath.Cache{For: identitiesFor, Places: cls.PlacePaths, Secrets: cls.SecretFolders, Home: u.HomeDir}
	cl.cls = cls
	cl.judge = judgement.Judge{Cfg: cl.cfg, Rules: cls, Links: filepath.EvalSymlinks, Places: places.Get}
	if c.View != nil { // the caller's worker follows the links, as the caller
		cl.judge.Links, cl.judge.Places = nil, nil
	}
	c.mu.Lock()
	if c.users == nil {
		c.users = map[uint32]*caller{}
	}
	c.users[uid] = cl
	c.mu.Unlock()
	return cl, nil
}
