package injector

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/coworkbridge/coworkbridge/allowlist"
	"github.com/coworkbridge/coworkbridge/frontmatter"
	"github.com/coworkbridge/coworkbridge/session"
)

// The CLI reads more than settings from a configuration folder: markdown files whose frontmatter
// runs hooks of every type, starts MCP and LSP servers, picks the shell for inline commands or
// names an agent for the main thread, and folders of whole programs (plugins, workflows,
// routines, launch configurations). CLI 2.1.332 keeps its own sandbox's writes out of the same
// places. A session has two such folders the agent writes: its .claude (the user level, since
// CLAUDE_CONFIG_DIR names it) and outputs/.claude (the project level, cwd being outputs/).
//
// What in them can start something is held as the settings are: a frontmatter's dangerous keys are
// cut out with the original kept aside, and a file or folder that cannot be judged key by key is
// moved aside whole, into HeldDir, where the CLI reads nothing. An admin admits one by name
// (allowlist.List.File).
var surfaceLevels = []string{session.ClaudeDir, projectClaudeDir}

// HeldDir is where held configuration goes (session.HeldDir).
const HeldDir = session.HeldDir

// surfaceKinds are the folders of markdown files and the kind of frontmatter each holds; deep
// ones are read through their sub-folders (commands/ops/deploy.md is the command ops:deploy).
var surfaceKinds = []struct {
	dir   string
	kind  frontmatter.Kind
	admin string // the allow-list's name for the kind
	deep  bool
}{
	{"skills", frontmatter.Skill, "skills", false},
	{"agents", frontmatter.Agent, "agents", true},
	{"commands", frontmatter.Command, "commands", true},
	{"output-styles", frontmatter.OutputStyle, "outputStyles", true},
}

// surfaceWhole are entries of a configuration folder that hold programs or say which to start,
// with nothing in them to judge key by key: held whole unless the admin names them.
var surfaceWhole = map[string]string{
	"workflows": "workflows", "routines": "routines", "launch.json": "launch",
	// The cached copy of the organisation's server-managed settings and what the CLI keeps
	// beside it (signatures, sync stamp, consent records): when a fetch fails or has not
	// finished, a non-empty cache takes the managed tier and the drop-in is not used (verified
	// with CLI 2.1.332, docs/CLAUDE-CODE-FACTS.md). A Cowork session's own CLI is not eligible
	// for server settings and never writes one, so a cache in a configuration folder of the
	// session was planted, or written by a CLI that was made eligible.
	"remote-settings.json": remoteSettings, "remote-settings.json.signature.json": remoteSettings,
	"remote-settings.json.signature-iat.json": remoteSettings, "remote-settings.json.synced-at": remoteSettings,
	"remote-settings-consent.json": remoteSettings, "remote-settings-helper-consent": remoteSettings,
}

// remoteSettings is the allow-list's name for the server-managed settings' cache.
const remoteSettings = "remoteSettings"

// wholeWhy says why an entry of surfaceWhole is held.
func wholeWhy(admin string) string {
	if admin == remoteSettings {
		return "a cached copy of server-managed settings, which pushes the managed-settings drop-in (and coworkbridge's hook in it) out of the managed tier"
	}
	return "it starts programs the admin has not allowed"
}

// pluginsDir holds installed plugins (cache/, marketplaces/, installed_plugins.json, ...), each
// of which can start programs, beside store/, where the CLI keeps its built-in plugins' state
// and which it makes in every session: everything but store/ is held unless the admin allows
// "plugins".
const pluginsDir = "plugins"

const pluginsState = "store"

// Bounds of one pass over a configuration folder: a flood of files is held at the rescan, not in
// one pass that never ends.
const (
	maxSurfaceEntries = 256
	maxSurfaceDepth   = 4
	maxSurfaceBytes   = 1 << 20
)

// surface is what one pass found and did.
type surface struct {
	s        *session.Session
	l        allowlist.List
	now      time.Time
	dry      bool     // only say what would be held
	levels   []string // the configuration folders to judge, relative to s
	found    []string // every hold, for the repair report
	attempts []string // the part only an attempt on the guard explains
	err      error    // the first hold that could not be made
}

// guardSurface holds the configuration beyond settings in both of the session's levels and in
// the .claude folders nested below outputs/ (found by findNested).
func guardSurface(s *session.Session, l allowlist.List, now time.Time, nested []string) (found, attempts []string, err error) {
	g := &surface{s: s, l: l, now: now, levels: append(slices.Clone(surfaceLevels), nested...)}
	return g.run()
}

// The CLI also finds skills in a .claude folder anywhere below its working folder (outputs/),
// once the agent touches a file there (verified with CLI 2.1.332, two levels down). Bounds of the
// search for them: the folders listed in one pass, and how deep.
const (
	maxNestedDirs  = 512
	maxNestedDepth = 8
)

// holdsNoConfig reports a folder whose tree holds no project's configuration: dependencies and
// git's own, which the search below outputs/ and its watches leave out.
func holdsNoConfig(name string) bool { return name == "node_modules" || name == ".git" }

// nestedConfig is the configuration below outputs/ that a CLI started in a folder there would
// load: its .claude folders and .mcp.json files (outputs/.claude and outputs/.mcp.json, the
// project level, aside), and links standing at either name.
type nestedConfig struct {
	levels []string
	mcp    []string
	links  []string
	over   bool // the bound cut the search short
}

// findNested searches below outputs/ through real folders only, skipping what holds no
// project's configuration (dependencies, git's own). Past the bound, deeper configuration goes
// unjudged (THREATS.md); the classifier still refuses a tool call's write into any of it.
func findNested(s *session.Session) nestedConfig {
	var nc nestedConfig
	queue := []string{"outputs"}
	listed := 0
	for depth := 0; len(queue) > 0 && depth < maxNestedDepth; depth++ {
		var next []string
		for _, dir := range queue {
			if listed++; listed > maxNestedDirs {
				nc.over = true
				return nc
			}
			entries, _ := s.ReadDir(dir, maxSurfaceEntries*4)
			for _, e := range entries {
				name := dir + "/" + e.Name()
				configName := e.Name() == session.ClaudeDir || e.Name() == mcpFileName
				switch {
				case depth == 0 && configName:
					// The project level: guardProject and guardMCP hold it.
				case configName && e.Type()&fs.ModeSymlink != 0:
					nc.links = append(nc.links, name)
				case e.Name() == mcpFileName:
					nc.mcp = append(nc.mcp, name)
				case !e.IsDir() || e.Type()&fs.ModeSymlink != 0:
				case e.Name() == session.ClaudeDir:
					nc.levels = append(nc.levels, name)
				case holdsNoConfig(e.Name()):
				default:
					next = append(next, name)
				}
			}
		}
		queue = next
	}
	return nc
}

// JudgeSurface says what the daemon would hold of the configuration folders levels (relative to
// s, such as ".claude"), and which of it is an attempt on the guard, changing nothing: for
// `check --settings` on a folder.
func JudgeSurface(s *session.Session, levels []string, l allowlist.List) (held, attempts []string, err error) {
	g := &surface{s: s, l: l, dry: true, levels: levels}
	return g.run()
}

func (g *surface) run() (found, attempts []string, err error) {
	for _, level := range g.levels {
		if !g.isDir(level) {
			continue
		}
		for name, admin := range surfaceWhole {
			g.holdWhole(level+"/"+name, admin)
		}
		g.plugins(level + "/" + pluginsDir)
		for _, k := range surfaceKinds {
			if g.isDir(level + "/" + k.dir) {
				g.walk(level+"/"+k.dir, k.kind, k.admin, k.deep, 0)
			}
		}
	}
	return g.found, g.attempts, g.err
}

// isDir reports whether name is a folder, not a link to one.
func (g *surface) isDir(name string) bool {
	fi, err := g.s.Lstat(name)
	return err == nil && fi.IsDir()
}

// walk judges the entries of one folder of kind k.
func (g *surface) walk(dir string, k frontmatter.Kind, admin string, deep bool, depth int) {
	entries, err := g.s.ReadDir(dir, maxSurfaceEntries)
	if err != nil && !errors.Is(err, session.ErrTooLarge) {
		g.fail(fmt.Errorf("list %s: %w", dir, err))
		return
	}
	if errors.Is(err, session.ErrTooLarge) {
		g.note(dir+fmt.Sprintf(": more than %d entries, only the first judged", maxSurfaceEntries), true)
	}
	for _, e := range entries {
		name := dir + "/" + e.Name()
		switch {
		case e.Type()&fs.ModeSymlink != 0, !e.IsDir() && !e.Type().IsRegular():
			g.removeOdd(name, e.Type())
		case k == frontmatter.Skill && e.IsDir():
			g.skill(name, admin)
		case e.IsDir() && deep && depth < maxSurfaceDepth:
			g.walk(name, k, admin, deep, depth+1)
		case !e.IsDir() && strings.EqualFold(path.Ext(name), ".md") && k != frontmatter.Skill:
			g.file(name, k, admin, fileName(name))
		case !e.IsDir():
			// Another kind of file: CLI 2.1.332 reads only markdown here, and the temporary file
			// of an atomic write (agent.md.tmp, renamed over agent.md) stands here for a moment;
			// holding it would break the write. A release that reads other kinds needs a new row.
		default:
			g.moveAside(name, fmt.Sprintf("a folder more than %d levels down", maxSurfaceDepth), g.l.File(admin, e.Name()), false)
		}
	}
}

// skill judges a skill's folder: its SKILL.md, in whatever case (macOS's file systems ignore it).
// The rest of the folder is the skill's scripts and notes, which run only through judged calls.
func (g *surface) skill(dir, admin string) {
	names, err := g.s.ReadDirNames(dir, maxSurfaceEntries)
	if err != nil && !errors.Is(err, session.ErrTooLarge) {
		g.fail(fmt.Errorf("list %s: %w", dir, err))
		return
	}
	for _, n := range names {
		if !strings.EqualFold(n, "SKILL.md") {
			continue
		}
		name := dir + "/" + n
		fi, err := g.s.Lstat(name)
		switch {
		case err != nil:
			g.fail(fmt.Errorf("examine %s: %w", name, err))
		case !fi.Mode().IsRegular() && !fi.IsDir():
			g.removeOdd(name, fi.Mode().Type())
		case fi.IsDir():
			g.moveAside(name, "a folder named like a skill file", g.l.File(admin, path.Base(dir)), true)
		default:
			g.file(name, frontmatter.Skill, admin, path.Base(dir))
		}
	}
}

// fileName is the name an admin allows a markdown file by: its name less ".md".
func fileName(name string) string {
	base := path.Base(name)
	return base[:len(base)-len(path.Ext(base))]
}

// file judges one markdown file and holds what it must.
func (g *surface) file(name string, k frontmatter.Kind, admin, id string) {
	if g.l.File(admin, id) {
		return
	}
	fi, err := g.s.Lstat(name)
	if err != nil {
		g.fail(fmt.Errorf("examine %s: %w", name, err))
		return
	}
	if fi.Size() > maxSurfaceBytes {
		g.moveAside(name, "too large to judge", false, true)
		return
	}
	data, err := g.s.ReadFile(name, maxSurfaceBytes)
	if err != nil {
		g.fail(fmt.Errorf("read %s: %w", name, err))
		return
	}
	v := frontmatter.Judge(k, data, nil)
	switch {
	case v.Clean():
	case v.Whole != "" || v.Shell:
		g.moveAside(name, strings.Join(v.Reasons(), "; "), false, true)
	default:
		g.cut(name, data, v, fi.Mode().Perm())
	}
}

// cut puts what the verdict keeps in place of the file, with the original kept aside.
func (g *surface) cut(name string, data []byte, v frontmatter.Verdict, perm fs.FileMode) {
	attempt := false
	for _, k := range v.Held {
		attempt = attempt || frontmatter.Dangerous(k)
	}
	if g.dry {
		g.note(fmt.Sprintf("%s: would hold %s", name, strings.Join(v.Held, ", ")), attempt)
		return
	}
	aside := g.heldName(name)
	if err := g.prepareHeld(); err != nil {
		g.fail(err)
		return
	}
	if err := g.s.WriteFile(aside, data, 0o600); err != nil {
		g.fail(fmt.Errorf("keep a copy of %s: %w", name, err))
		return
	}
	if err := g.s.Replace(name, v.Keep, perm); err != nil && !errors.Is(err, fs.ErrNotExist) {
		g.fail(fmt.Errorf("write %s: %w", name, err))
		return
	}
	g.note(fmt.Sprintf("%s: held %s (original kept as %s)", name, strings.Join(v.Held, ", "), aside), attempt)
}

// holdWhole moves aside an entry that is a program or names one, unless the admin allows it.
func (g *surface) holdWhole(name, admin string) {
	fi, err := g.s.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		g.fail(fmt.Errorf("examine %s: %w", name, err))
	case fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() && !fi.Mode().IsRegular():
		g.removeOdd(name, fi.Mode().Type())
	default:
		g.moveAside(name, wholeWhy(admin), g.l.Admits(admin), true)
	}
}

// plugins holds what is installed in a plugins folder, the CLI's own state aside.
func (g *surface) plugins(dir string) {
	fi, err := g.s.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return
	case err != nil:
		g.fail(fmt.Errorf("examine %s: %w", dir, err))
		return
	case !fi.IsDir():
		g.holdWhole(dir, pluginsDir)
		return
	}
	names, err := g.s.ReadDirNames(dir, maxSurfaceEntries)
	if err != nil && !errors.Is(err, session.ErrTooLarge) {
		g.fail(fmt.Errorf("list %s: %w", dir, err))
		return
	}
	for _, n := range names {
		if n == pluginsState && g.isDir(dir+"/"+n) {
			continue
		}
		g.holdWhole(dir+"/"+n, pluginsDir)
	}
}

// moveAside moves name into HeldDir whole, unless allowed.
func (g *surface) moveAside(name, why string, allowed, attempt bool) {
	if allowed {
		return
	}
	if g.dry {
		g.note(fmt.Sprintf("%s: would hold whole, %s", name, why), attempt)
		return
	}
	aside := g.heldName(name)
	if err := g.prepareHeld(); err != nil {
		g.fail(err)
		return
	}
	if err := g.s.MoveAside(name, aside); err != nil && !errors.Is(err, fs.ErrNotExist) {
		g.fail(fmt.Errorf("move %s aside: %w", name, err))
		return
	}
	g.note(fmt.Sprintf("%s: held whole, %s (moved to %s)", name, why, aside), attempt)
}

// removeOdd removes a link or special file from a configuration folder: the CLI would follow a
// link out of the session, and the link itself is the agent's.
func (g *surface) removeOdd(name string, t fs.FileMode) {
	if g.dry {
		g.note(fmt.Sprintf("%s: a link or special file (%v) in the CLI's configuration, would be removed", name, t), true)
		return
	}
	if err := g.s.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		g.fail(fmt.Errorf("remove the %v at %s: %w", t, name, err))
		return
	}
	g.note(fmt.Sprintf("%s: a link or special file (%v) in the CLI's configuration, removed", name, t), true)
}

// maxHeldEntries bounds what HeldDir keeps: an agent that plants in a loop must not fill the disk
// with copies. Past it the oldest files go (their names start with the time they were held);
// what each held was is in the daemon's log.
const maxHeldEntries = 256

// prepareHeld makes HeldDir, and makes room in it.
func (g *surface) prepareHeld() error {
	if err := g.s.MkdirAll(HeldDir, 0o700); err != nil {
		return fmt.Errorf("prepare %s: %w", HeldDir, err)
	}
	names, _ := g.s.ReadDirNames(HeldDir, 4*maxHeldEntries)
	if len(names) < maxHeldEntries {
		return nil
	}
	slices.Sort(names)
	for _, n := range names[:len(names)-maxHeldEntries+1] {
		// A folder held whole (plugins, workflows) stays: Remove takes empty folders only.
		_ = g.s.Remove(HeldDir + "/" + n)
	}
	return nil
}

// heldName is where name is kept aside: one flat name per entry and time, directly in HeldDir.
func (g *surface) heldName(name string) string {
	flat := strings.NewReplacer("/", "__").Replace(name)
	return HeldDir + "/" + g.now.UTC().Format("20060102T150405.000Z") + "-" + flat
}

func (g *surface) note(msg string, attempt bool) {
	g.found = append(g.found, msg)
	if attempt {
		g.attempts = append(g.attempts, msg)
	}
}

func (g *surface) fail(err error) {
	if g.err == nil {
		g.err = err
	}
}

// surfaceStamps stamps every entry of the configuration folders guardSurface reads, so that a
// rescan can tell an unchanged surface from a file rewritten in place (which changes no
// folder's times). It reads names, not contents, and stops after maxSurfaceEntries entries.
func surfaceStamps(s *session.Session) []session.Stamp {
	var out []session.Stamp
	nc := findNested(s)
	for _, name := range nc.files() {
		out = stampTree(s, name, out, maxSurfaceDepth)
	}
	for _, level := range append(slices.Clone(surfaceLevels), nc.levels...) {
		names, _ := s.ReadDirNames(level, maxSurfaceEntries)
		for _, n := range names {
			if surfaceWhole[n] != "" || n == pluginsDir || isKindDir(n) {
				out = stampTree(s, level+"/"+n, out, 0)
			}
		}
	}
	return out
}

func isKindDir(n string) bool {
	for _, k := range surfaceKinds {
		if k.dir == n {
			return true
		}
	}
	return false
}

// stampTree appends the stamps of name and, for a folder, of what is below it.
func stampTree(s *session.Session, name string, out []session.Stamp, depth int) []session.Stamp {
	fi, err := s.Lstat(name)
	if err != nil || len(out) >= maxSurfaceEntries {
		return out
	}
	out = append(out, session.StampOf(fi))
	if !fi.IsDir() || depth > maxSurfaceDepth {
		return out
	}
	names, _ := s.ReadDirNames(name, maxSurfaceEntries)
	for _, n := range names {
		out = stampTree(s, name+"/"+n, out, depth+1)
	}
	return out
}
