// Package instructions is the load-time layer of the instruction-file defence. Text an agent will
// obey can reach a session's CLAUDE.md, skills or memory by routes no tool call shows (a
// connector, a sync, an editor on the Mac). A Scan looks at those files again at each
// housekeeping pass, judges what changed with the content rules, and says which files hold such
// text, and which of them a block rule forbids.
//
// It reads the session only through session.Session (no link is followed, every read bounded)
// and never changes a file; what to log, report and quarantine is the collector's. A Scan's state
// is reachable only through its methods: it belongs to its session's worker.
package instructions

import (
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
	"github.com/coworkbridge/coworkbridge/session"
)

// Bounds on one scan: the session folder is hostile, and may hold anything. The files Claude
// Code loads by itself are looked at whatever the walk's bounds: flooding a folder with files
// must not hide the one the CLI reads.
const (
	maxDepth   = 5
	maxFiles   = 512
	maxEntries = 4096
	// window is one read of a file's text, and overlap what two windows share, so that a phrase
	// across their border is judged whole; a file of any size is read this way to its end.
	window  = 256 << 10
	overlap = 8 << 10
	// maxImportDepth is how many @imports deep Claude Code follows a memory file.
	maxImportDepth = 5
)

// loaded are the files Claude Code reads at the start of a session's CLI, which runs with its
// working folder in outputs and CLAUDE_CONFIG_DIR at .claude: the memory files of the user (the
// config folder) and of every folder from the working one up to the session's, and the rules
// folders beside them (walked below, first).
var loaded = []string{
	".claude/CLAUDE.md",
	"CLAUDE.md", "CLAUDE.local.md",
	"outputs/CLAUDE.md", "outputs/CLAUDE.local.md", "outputs/.claude/CLAUDE.md",
}

// loadedDirs are folders whose every file Claude Code may load as instructions: rules, and
// auto-memory (MEMORY.md at the start, the topic files it names when the agent reads them).
var loadedDirs = []string{".claude/rules", "outputs/.claude/rules"}

// roots are where a session keeps other instructions, walked within the bounds: its .claude
// folder (skills, commands, agents) and the folders the agent works in (nested CLAUDE.md).
var roots = []string{session.ClaudeDir, "outputs", "uploads"}

// skip are folders that hold no instructions and may be large.
var skip = map[string]bool{session.BridgeDir: true, ".claude/projects": true, ".claude/todos": true,
	".claude/shell-snapshots": true, ".claude/statsig": true, ".claude/plugins/cache": true, ".git": true, "node_modules": true}

// Finder finds the text an agent would obey in an instruction file: *classifier.Classifier in
// the daemon, or root's over a system-mode worker's link.
type Finder interface {
	InstructionFindings(text string) []classifier.Verdict
}

// Scan is what the last look at a session's instruction files saw.
type Scan struct {
	files map[string]scanned
	// reported is the findings last returned as changed, to report only changes.
	reported map[string][]string
	// folders are the walk's folders as the last look listed them, by name.
	folders map[string]listing
	// now is the file system's clock (time.Now when nil), for the folders' stamps.
	now func() time.Time
}

// listing is what a folder of the walk held, and its stamp when it was listed: found with the
// same stamp, it holds the same entries (any made, removed or renamed in it changes the stamp),
// and is not listed again. The files themselves are still looked at, for changes in place.
type listing struct {
	stamp   session.Stamp
	entries int      // counted against the walk's bound as a listing would
	folders []string // to walk into
	files   []string // instruction files
}

type scanned struct {
	size    int64
	mod     time.Time
	rules   []string
	blocked bool     // a block rule matched (not one only asked about, nor one in observe)
	imports []string // the session-relative files it @imports
}

// Result is what a look found.
type Result struct {
	// Findings are the files holding text the content rules flag, with the rules; Changed,
	// whether they differ from the last look's, and New the files whose rules are not the
	// last look's (sorted).
	Findings map[string][]string
	Changed  bool
	New      []string
	// Blocked are the files a block rule forbids, sorted.
	Blocked []string
	// Scanned are the files looked at, sorted: what Claude Code loads and what the walk found.
	Scanned []string
	// Moved: a file was judged (new or changed since the last look) or is gone since it.
	Moved bool
}

// look is one look in progress.
type look struct {
	sc      *Scan
	s       *session.Session
	cls     Finder
	seen    map[string]scanned
	entries int
	judged  int
	// folders are the walk's listings for the next look; now is the file system's clock.
	folders map[string]listing
	now     time.Time
}

// Look looks at the session's instruction files, judges those that changed since the last look
// with cls, and says what they hold now. What Claude Code loads comes first, and every file it
// @imports from there (as deep as it follows them); then the walk of the rest.
func (sc *Scan) Look(s *session.Session, cls Finder) Result {
	now := time.Now
	if sc.now != nil {
		now = sc.now
	}
	l := &look{sc: sc, s: s, cls: cls, seen: map[string]scanned{}, folders: map[string]listing{}, now: now()}
	for _, name := range loaded {
		l.visit(name, 0)
	}
	for _, dir := range append(slices.Clone(loadedDirs), memoryDirs(s)...) {
		l.walkAll(dir, 0)
	}
	for _, root := range roots {
		l.walk(root, 0)
	}
	moved := l.judged > 0 || len(l.seen) != len(sc.files)
	sc.files, sc.folders = l.seen, l.folders
	res := sc.result()
	res.Moved = moved
	return res
}

// visit judges one file if it changed, then the files it imports.
func (l *look) visit(name string, depth int) {
	if _, done := l.seen[name]; done || len(l.seen) >= maxFiles {
		return
	}
	fi, err := l.s.Lstat(name)
	if err != nil || !fi.Mode().IsRegular() {
		return // absent, or a link, which Claude Code would follow out of the session: not read
	}
	f, ok := l.sc.files[name]
	if !ok || f.size != fi.Size() || !f.mod.Equal(fi.ModTime()) {
		f = judge(l.s, name, fi, l.cls)
		l.judged++
	}
	l.seen[name] = f
	if depth < maxImportDepth {
		for _, imp := range f.imports {
			l.visit(imp, depth+1)
		}
	}
}

// walkAll visits every regular file below dir, within the depth bound but not the walk's
// entry budget: these folders are loaded whole.
func (l *look) walkAll(dir string, depth int) {
	if depth > maxDepth {
		return
	}
	list, err := l.s.ReadDir(dir, maxEntries)
	if err != nil {
		return
	}
	for _, e := range list {
		child := dir + "/" + e.Name()
		switch {
		case e.Type().IsDir():
			l.walkAll(child, depth+1)
		case e.Type().IsRegular():
			l.visit(child, 0)
		}
	}
}

// memoryDirs are the session's auto-memory folders: .claude/projects/<project>/memory.
func memoryDirs(s *session.Session) []string {
	projects, err := s.ReadDir(".claude/projects", maxEntries)
	if err != nil {
		return nil
	}
	var out []string
	for _, p := range projects {
		if p.Type().IsDir() {
			out = append(out, ".claude/projects/"+p.Name()+"/memory")
		}
	}
	return out
}

func (sc *Scan) result() Result {
	res := Result{Findings: map[string][]string{}, Scanned: slices.Sorted(maps.Keys(sc.files))}
	for name, f := range sc.files {
		if len(f.rules) > 0 {
			res.Findings[name] = f.rules
		}
		if f.blocked {
			res.Blocked = append(res.Blocked, name)
		}
	}
	slices.Sort(res.Blocked)
	if !maps.EqualFunc(res.Findings, sc.reported, slices.Equal[[]string]) {
		res.Changed = true
		for _, name := range slices.Sorted(maps.Keys(res.Findings)) {
			if !slices.Equal(res.Findings[name], sc.reported[name]) {
				res.New = append(res.New, name)
			}
		}
		sc.reported = res.Findings
	}
	return res
}

// Footprint is what the scan keeps in memory, in bytes: each file's name, stamp and rules.
func (sc *Scan) Footprint() int64 {
	n := int64(0)
	for name, f := range sc.files {
		n += int64(len(name)) + 64
		for _, r := range f.rules {
			n += int64(len(r)) + 16
		}
	}
	n *= 2 // the findings last reported hold the same names and rules again
	for name, ls := range sc.folders {
		n += int64(len(name)) + 96
		for _, e := range ls.folders {
			n += int64(len(e)) + 16
		}
		for _, e := range ls.files {
			n += int64(len(e)) + 16
		}
	}
	return n
}

// Rules are the rules a file matched at the last look.
func (sc *Scan) Rules(name string) []string { return sc.files[name].rules }

// walk visits each instruction file below name, within the bounds, never through a link.
func (l *look) walk(name string, depth int) {
	if depth > maxDepth || skip[name] || l.entries >= maxEntries {
		return
	}
	ls, ok := l.list(name)
	if !ok {
		return // absent, a link, or not a folder: nothing to scan there
	}
	l.entries += ls.entries
	for _, f := range ls.files {
		l.visit(name+"/"+f, 0)
	}
	for _, d := range ls.folders {
		l.walk(name+"/"+d, depth+1)
	}
}

// list is what the folder name holds: as the last look listed it when its stamp is the same, or
// listed now. A folder changed within session.QuietAfter is listed at each look: the file
// system's clock is coarse, and an entry made in the same tick as the stamp would not change it.
func (l *look) list(name string) (listing, bool) {
	st := l.s.StampOf(name)
	if !st.Mode.IsDir() {
		return listing{}, false
	}
	if ls, ok := l.sc.folders[name]; ok && ls.stamp == st && ls.entries <= maxEntries-l.entries {
		l.folders[name] = ls
		return ls, true
	}
	list, err := l.s.ReadDir(name, maxEntries-l.entries)
	if err != nil {
		return listing{}, false
	}
	ls := listing{stamp: st, entries: len(list)}
	for _, e := range list {
		switch {
		case e.Type().IsDir():
			if !skip[e.Name()] {
				ls.folders = append(ls.folders, e.Name())
			}
		case e.Type().IsRegular() && Name(name+"/"+e.Name()):
			ls.files = append(ls.files, e.Name())
		}
	}
	if l.now.UnixNano()-max(st.Mod, st.Changed) > int64(session.QuietAfter) {
		l.folders[name] = ls
	}
	return ls, true
}

// Name reports a file agents read as instructions (a session-relative name): a known
// instruction file, or markdown under .claude or a memory folder.
func Name(name string) bool {
	if !classifier.InstructionFile(name) {
		return false
	}
	base := strings.ToLower(path.Base(name))
	return strings.HasSuffix(base, ".md") || base == ".cursorrules" || base == ".windsurfrules"
}

// judge reads one file to its end, a window at a time, and judges its text and finds what it
// imports.
func judge(s *session.Session, name string, fi fs.FileInfo, cls Finder) scanned {
	f := scanned{size: fi.Size(), mod: fi.ModTime()}
	file, err := s.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return f
	}
	defer file.Close()
	rules := map[string]bool{}
	imports := map[string]bool{}
	buf := make([]byte, 0, window)
	for {
		n, err := io.ReadFull(file, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		text := string(buf)
		for _, v := range cls.InstructionFindings(text) {
			rules[v.RuleID] = true
			f.blocked = f.blocked || v.Decision == claudehook.Deny && !v.ObserveOnly
		}
		for _, imp := range Imports(text, path.Dir(name), s.Dir()) {
			imports[imp] = true
		}
		if err != nil { // the end, or a read that failed: what was read is judged
			break
		}
		keep := buf[len(buf)-overlap:]
		buf = append(buf[:0], keep...)
	}
	f.rules = slices.Sorted(maps.Keys(rules))
	f.imports = slices.Sorted(maps.Keys(imports))
	return f
}

// importRef is an @import in a memory file: an @ that starts a word, then a path.
var importRef = lazyregexp.New(`(?m)(?:^|[\s(])@((?:~/|/|\.{1,2}/)?[A-Za-z0-9_.\-][^\s()` + "`" + `]*)`)

// Imports are the files a memory file in folder dir (session-relative) imports, as session-
// relative names; those outside the session (an absolute path elsewhere, ~) are not the
// session's to read and are left out. sessionDir is the session folder's absolute path. Code
// spans and fenced blocks import nothing, as in Claude Code.
func Imports(text, dir, sessionDir string) []string {
	var out []string
	fenced := false
	for line := range strings.Lines(text) {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range importRef.FindAllStringSubmatchIndex(line, -1) {
			if strings.Count(line[:m[2]], "`")%2 == 1 {
				continue // inside a code span
			}
			if name, ok := inSession(strings.TrimRight(line[m[2]:m[3]], ".,;:!?\"'"), dir, sessionDir); ok {
				out = append(out, name)
			}
		}
	}
	return out
}

func inSession(ref, dir, sessionDir string) (string, bool) {
	var p string
	switch {
	case strings.HasPrefix(ref, "~"):
		return "", false
	case strings.HasPrefix(ref, "/"):
		rel, ok := strings.CutPrefix(path.Clean(ref), path.Clean(filepath.ToSlash(sessionDir))+"/")
		if !ok {
			return "", false
		}
		p = rel
	default:
		p = path.Join(dir, ref)
	}
	if p == "." || p == ".." || strings.HasPrefix(p, "../") || path.IsAbs(p) {
		return "", false
	}
	return p, true
}
