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
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/session"
)

// Bounds on one scan: the session folder is hostile, and may hold anything.
const (
	maxDepth   = 5
	maxFiles   = 256
	maxEntries = 4096
	maxBytes   = 256 << 10
)

// roots are where a session keeps instructions: its .claude folder (CLAUDE.md, skills,
// commands, agents, memory) and the folders the agent works in.
var roots = []string{session.ClaudeDir, "outputs", "uploads"}

// skip are folders that hold no instructions and may be large.
var skip = map[string]bool{session.BridgeDir: true, ".claude/projects": true, ".claude/todos": true,
	".claude/shell-snapshots": true, ".claude/statsig": true, ".claude/plugins/cache": true, ".git": true, "node_modules": true}

// Scan is what the last look at a session's instruction files saw.
type Scan struct {
	files map[string]scanned
	// reported is the findings last returned as changed, to report only changes.
	reported map[string][]string
}

type scanned struct {
	size    int64
	mod     time.Time
	rules   []string
	blocked bool // a block rule matched (not one only asked about, nor one in observe)
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
}

// Look looks at the session's instruction files, judges those that changed since the last look
// with cls, and says what they hold now.
func (sc *Scan) Look(s *session.Session, cls *classifier.Classifier) Result {
	seen := map[string]scanned{}
	entries := 0
	for _, root := range roots {
		walk(s, root, 0, &entries, func(name string, fi fs.FileInfo) {
			if len(seen) >= maxFiles {
				return
			}
			if old, ok := sc.files[name]; ok && old.size == fi.Size() && old.mod.Equal(fi.ModTime()) {
				seen[name] = old // unchanged since it was judged
				return
			}
			seen[name] = judge(s, name, fi, cls)
		})
	}
	sc.files = seen
	res := Result{Findings: map[string][]string{}}
	for name, f := range seen {
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
	return 2 * n // the findings last reported hold the same names and rules again
}

// Rules are the rules a file matched at the last look.
func (sc *Scan) Rules(name string) []string { return sc.files[name].rules }

// walk calls fn for each instruction file below name, within the bounds, never through a link.
func walk(s *session.Session, name string, depth int, entries *int, fn func(string, fs.FileInfo)) {
	if depth > maxDepth || skip[name] || *entries >= maxEntries {
		return
	}
	list, err := s.ReadDir(name, maxEntries-*entries)
	if err != nil {
		return // absent, a link, or not a folder: nothing to scan there
	}
	*entries += len(list)
	for _, e := range list {
		child := name + "/" + e.Name()
		switch {
		case e.Type().IsDir():
			if !skip[e.Name()] {
				walk(s, child, depth+1, entries, fn)
			}
		case e.Type().IsRegular() && Name(child):
			if fi, err := e.Info(); err == nil && fi.Size() <= maxBytes {
				fn(child, fi)
			}
		}
	}
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

// judge reads one file and judges its text.
func judge(s *session.Session, name string, fi fs.FileInfo, cls *classifier.Classifier) scanned {
	f := scanned{size: fi.Size(), mod: fi.ModTime()}
	data, err := s.ReadFile(name, maxBytes)
	if err != nil {
		return f
	}
	for _, v := range cls.InstructionFindings(string(data)) {
		f.rules = append(f.rules, v.RuleID)
		f.blocked = f.blocked || v.Decision == claudehook.Deny && !v.ObserveOnly
	}
	return f
}
