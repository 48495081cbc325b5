package classifier

import (
	"context"
	"encoding/json"
	"path"
	"strings"

	"github.com/coworkbridge/coworkbridge/classifier/facts"
	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
	"github.com/coworkbridge/coworkbridge/internal/nameset"
	"mvdan.cc/sh/v3/syntax"

	"github.com/coworkbridge/coworkbridge/claudehook"
)

// Owners of the places a policy protects (Policy.Places).
const (
	OwnerGuard    = "coworkbridge"            // read and written by nothing the agent runs
	OwnerSessions = "cowork-sessions"         // a session's own folder is its; the rest is others'
	OwnerApp      = "claude-app"              // read, never written
	OwnerManaged  = "claude-managed-settings" // read, never written
)

// A Place is a location its caller's machine protects by who owns it. Stem: every name that
// begins with Path is the place too (a log and its rotated files). The classifier never looks at
// the disk: it compares the paths a call names with these.
type Place struct {
	Path  string
	Owner string
	What  string
	Stem  bool
}

// place is a Place with its path in the form calls' paths are judged in (CanonPath).
type place struct {
	Place
	canon string
}

func compilePlaces(ps []Place) []place {
	out := make([]place, 0, len(ps))
	for _, p := range ps {
		if c := facts.CanonPath(p.Path, ""); c != "" && c != "/" && c != "~" {
			out = append(out, place{p, c})
		}
	}
	return out
}

// PlacePaths are the paths of the places the policy protects, as it was given them; of those,
// coworkbridge's own folders and the sessions roots: for a caller that compares what a call
// reaches by identity (the classifier itself never looks at the disk).
func (c *Classifier) PlacePaths() (all, guard, sessions []string) {
	for _, pl := range c.places {
		all = append(all, pl.Path)
		switch pl.Owner {
		case OwnerGuard:
			guard = append(guard, pl.Path)
		case OwnerSessions:
			sessions = append(sessions, pl.Path)
		}
	}
	return all, guard, sessions
}

// SecretFolders are the folders the read rules protect, as their expressions name them from
// their start (~/.ssh, ~/.aws, ~/Library/Keychains; see patternPaths): a second name of one of
// them, or a hard link to a file inside, is that folder or that file (package realpath, given
// the home for ~/). Listing them reads the rules' expressions, which a hook's process has not
// parsed: it is done once, and only when a file with several names is looked up.
func (c *Classifier) SecretFolders() []string {
	if v, ok := c.globPaths.Load(secretFoldersKey); ok {
		return v.([]string)
	}
	out := c.secretFolders()
	c.globPaths.Store(secretFoldersKey, out)
	return out
}

// secretFoldersKey keeps SecretFolders beside the patterns' paths: no expression is this.
const secretFoldersKey = "\x00secret folders"

func (c *Classifier) secretFolders() []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range c.rules[TargetRead] {
		for _, re := range r.Patterns {
			for _, p := range c.patternPaths(re.src) {
				if strings.HasPrefix(p, "~/") && !broadFolders.Has(p) && !seen[p] {
					seen[p] = true
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// broadFolders are where a read rule's expression stops being listable while most of what lies
// below is no secret (~/.config/gh/hosts.yml is; the rest of ~/.config is not): searching them
// for a file's other names would spend the search's bound on them.
var broadFolders = nameset.Of("~/Library", "~/.config", "~/.local", "~/.local/share")

// contains reports whether path p (canonical) is the place or lies inside it. A Mac's disk does
// not tell case apart, so neither does this.
func (pl place) contains(p string) bool { return under(p, pl.canon, pl.Stem) }

func under(p, dir string, stem bool) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	if len(p) < len(dir) || !strings.EqualFold(p[:len(dir)], dir) {
		return false
	}
	return len(p) == len(dir) || p[len(dir)] == '/' || stem
}

// reachedBy reports whether the item reaches the place: names it or something inside it, as a
// pattern that can match either, or as a search that starts above it.
func (pl place) reachedBy(it item) bool {
	if it.search && it.text == "/" {
		return false // the whole disk: asked about (read.search-disk), not refused
	}
	if it.namesOnly && !pl.contains(it.text) {
		return false // a search by name from above the place lists names and reads nothing there
	}
	if globbed(it.text) {
		inside, above := globReaches(it.text, pl.canon)
		if it.namesOnly { // a pattern that lists names reaches a place only by starting inside it
			return inside && pl.contains(globBase(it.text))
		}
		return inside || above && it.search
	}
	return pl.contains(it.text) || it.search && under(pl.canon, it.text, false)
}

// volfs reports a path through /.vol, which names a file by its volume and inode number: no
// path the map holds can be compared with it, so it is refused whatever it names.
func volfs(p string) bool { return facts.HasPrefixFold(p, "/.vol/") || strings.EqualFold(p, "/.vol") }

// reaches says how the item reaches the place, for the verdict.
func (pl place) reaches(it item) string {
	if it.search && !pl.contains(it.text) {
		return it.text + " (a search there reaches " + pl.What + ")"
	}
	return it.text + " (" + pl.What + ")"
}

// EvaluateFrom judges a call made from the session whose folder is own: the places of
// Policy.Places that are Cowork's sessions are others' but for it. own "" is a call from no
// session: every session's folder is another's.
func (c *Classifier) EvaluateFrom(ctx context.Context, p claudehook.Payload, own string) Verdict {
	return c.evaluate(ctx, p, facts.CanonPath(own, ""))
}

// Call is one tool call as the classifier judges it, with what its door worked out on the
// machine: the classifier itself never reads the disk.
type Call struct {
	Payload claudehook.Payload
	// Own is the calling session's folder: its files are not another session's. "" for a call
	// from no session of Cowork's.
	Own string
	// Resolve gives the call with its paths where the machine's links take them, when that
	// differs (the stricter verdict stands); nil judges the paths as written.
	Resolve func(claudehook.Payload) (claudehook.Payload, bool)
	// Files is the content of the files the call's shell command runs, as the door read them as
	// the user (ReadRuns): "" for one that does not exist, no entry for one it could not read
	// (which makes what runs unknown). Read, when Files is nil, is how the classifier has them
	// read itself (the door's reader, as the user). Both nil: nothing is read, and files run are
	// judged by name.
	Files map[string]string
	Read  func(path string) (string, error)
	// InVM: the call's shell runs in Cowork's VM (the VM loop, or the host loop's shell tool),
	// where a nested agent's guard would rest on a settings file the agent can rewrite.
	InVM bool
	// SessionGuarded: the call came through the session's own hook (its spool or host channel),
	// not the managed drop-in's, so that a nested Claude Code it starts would be guarded only by
	// the session's settings file, which the agent can rewrite as it starts.
	SessionGuarded bool
	// Where, for a shell that runs on this machine, is where its links and the protected places'
	// identities take a path a command names (written as the map writes paths: ~/x or /x), and
	// whether that is elsewhere: such a path is judged both ways. nil: as written only.
	Where func(path string) (string, bool)
}

// EvaluateCall judges call: as written, and again where Resolve takes its paths.
func (c *Classifier) EvaluateCall(ctx context.Context, call Call) Verdict {
	own, m := facts.CanonPath(call.Own, ""), machine{files: call.Files, inVM: call.InVM, sessionGuarded: call.SessionGuarded, where: call.Where}
	if m.files == nil && call.Read != nil {
		m.read = call.Read
	}
	v := c.evaluateIn(ctx, call.Payload, own, m)
	if v.Decision == claudehook.Deny && !v.ObserveOnly || call.Resolve == nil {
		return v
	}
	r, ok := call.Resolve(call.Payload)
	if !ok {
		return v
	}
	if w := c.evaluateIn(ctx, r, own, m); severity(w) > severity(v) {
		w.Reason += " (the path is a link to it)"
		w.kept = nil // the resolved call's analysis, not the one Effects reads
		return w
	}
	return v
}

// Bounds on the files one call's judgement reads: rounds (a script that runs a script), files
// and bytes. Past them, what is left is unread, and the call is asked about.
const (
	maxRunRounds = 3
	maxRunFiles  = 32
	maxRunBytes  = 1 << 20
)

// ReadRuns reads, with read, the files p's shell command runs, and those the files read run in
// turn, within bounds: what a door that cannot judge (a system-mode worker) hands with the call
// to the process that does. The paths are the command's; relative ones are read joined with the
// call's folder. A file read fails on is left out: unread, and asked about.
func ReadRuns(p claudehook.Payload, read func(string) (string, error)) map[string]string {
	if normalisedTool(p.ToolName) != "Bash" {
		return nil
	}
	var in struct {
		Command string `json:"command"`
	}
	if json.Unmarshal(p.ToolInput, &in) != nil {
		return nil
	}
	files, _ := readRounds(in.Command, p.Cwd, facts.AnalyzeWith(in.Command, nil, map[string]string{}), nil, read)
	return files
}

// readRounds reads, with read, what an (analysed with the files read so far) says the command
// runs, and analyses it again with them, round by round within bounds; it returns the files and
// the last analysis. A command that runs no file is analysed once.
func readRounds(command, cwd string, an *facts.Analysis, parser *syntax.Parser, read func(string) (string, error)) (map[string]string, *facts.Analysis) {
	files := an.Files
	if files == nil {
		files = map[string]string{}
	}
	total, tried := 0, map[string]bool{}
	for round := 0; round < maxRunRounds; round++ {
		progress := false
		for _, name := range an.ToRead() {
			if tried[name] || len(tried) >= maxRunFiles || total >= maxRunBytes {
				continue
			}
			tried[name] = true
			at := name
			if !strings.HasPrefix(at, "/") && !strings.HasPrefix(at, "~") {
				at = path.Join(cwd, at)
			}
			text, err := read(at)
			if err != nil || total+len(text) > maxRunBytes {
				continue
			}
			files[name], total, progress = text, total+len(text), true
		}
		if !progress {
			break
		}
		an = facts.AnalyzeWith(command, parser, files)
	}
	an.Files = files // what could not be read stays unread
	return files, an
}

// guardPlace finds a path that is coworkbridge's own.
func guardPlace(c *Classifier, it item) (string, bool) {
	if it.secretOnly {
		return "", false
	}
	if volfs(it.text) {
		return it.text + " (a /.vol path names a file by its number, past every path the map holds)", true
	}
	for _, pl := range c.places {
		if pl.Owner == OwnerGuard && pl.reachedBy(it) {
			return pl.reaches(it), true
		}
	}
	return "", false
}

// otherSession finds a path in another session's folder, or a folder above the sessions that a
// search would sweep them in: the Claude app's folder that holds them, a sessions root.
func otherSession(c *Classifier, it item) (string, bool) {
	if it.secretOnly || it.own != "" && under(it.text, it.own, false) {
		return "", false
	}
	for _, pl := range c.places {
		if pl.Owner != OwnerSessions {
			continue
		}
		if pl.contains(it.text) {
			return it.text + " (another session's folder)", true
		}
		if under(pl.canon, it.text, false) && c.inApp(it.text) && !it.namesOnly || pl.reachedBy(it) {
			return it.text + " (holds other sessions' folders)", true
		}
	}
	return "", false
}

// appPlace finds a write to the Claude app's or Claude Code's own configuration, outside the
// sessions (whose folders the session rules judge).
func appPlace(c *Classifier, it item) (string, bool) {
	if it.secretOnly {
		return "", false
	}
	for _, pl := range c.places {
		if pl.Owner == OwnerSessions && pl.contains(it.text) {
			return "", false
		}
	}
	for _, pl := range c.places {
		if (pl.Owner == OwnerApp || pl.Owner == OwnerManaged) && pl.reachedBy(it) {
			return pl.reaches(it), true
		}
	}
	if slug, ok := memoryProject(it.text); ok && len(c.places) > 0 && !ownProject(slug, it.cwd) {
		return it.text + " (another project's Claude Code memory, read by every later session there)", true
	}
	return "", false
}

// memoryPath is Claude Code's memory of a project run outside Cowork: ~/.claude/projects/<the
// project's folder, as a slug>/memory/.
var memoryPath = lazyregexp.New(`(?i)^~/\.claude/projects/([^/]+)/memory(/|$)`)

// memoryProject is the project slug of a memory path.
func memoryProject(p string) (string, bool) {
	m := memoryPath.FindStringSubmatch(p)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// ownProject reports whether slug is the memory of the folder the call runs in or of one above
// it (the project the CLI was started in): the CLI's own memory, which it writes itself.
func ownProject(slug, cwd string) bool {
	for dir := cwd; dir != "" && dir != "/" && dir != "."; dir = path.Dir(dir) {
		if strings.EqualFold(cliSlug(dir), slug) {
			return true
		}
	}
	return false
}

// cliSlug is the name the CLI gives a project's folder under ~/.claude/projects: every character
// but a letter or a digit becomes a dash.
func cliSlug(dir string) string {
	b := []byte(dir)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '-'
		}
	}
	return string(b)
}

// searchDisk finds a search of the whole disk, which reaches every place the map protects: asked
// about rather than refused, since an agent in a container searches / for ordinary reasons.
func searchDisk(c *Classifier, it item) (string, bool) {
	if !it.search || it.text != "/" || len(c.places) == 0 {
		return "", false
	}
	return "/ (a search of the whole disk reaches coworkbridge's files and every session's)", true
}

// homeBuiltPath finds interpreter code that builds its paths from the home folder: no path rule
// sees which file it reaches, and on the Mac it may be any under the home, the protected places
// among them. Asked about, not refused: scripts read their own configuration that way.
func homeBuiltPath(c *Classifier, it item) (string, bool) {
	if it.cmd != nil || it.an == nil || len(c.places) == 0 {
		return "", false
	}
	for _, a := range it.an.CodeActs {
		if a.Kind == facts.CodeHome {
			return a.By + " code that builds paths from the home folder (it may reach any file there)", true
		}
	}
	return "", false
}

func (c *Classifier) inApp(p string) bool {
	for _, pl := range c.places {
		if pl.Owner == OwnerApp && pl.contains(p) {
			return true
		}
	}
	return false
}
