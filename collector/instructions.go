package collector

import (
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/session"
)

// The load-time layer of the instruction-file defence. Text an agent will obey can reach a
// session's CLAUDE.md, skills or memory by routes no tool call shows (a connector, a sync, an
// editor on the Mac). Each housekeeping pass looks at those files again, judges what changed
// with the content rules, and reports the files that hold such text: a warning naming file and
// rules, and in enforce mode with policy.quarantine_on_injection, a quarantine while it lasts.
// The files themselves are never changed.

// Bounds on one scan: the session folder is hostile, and may hold anything.
const (
	instrMaxDepth   = 5
	instrMaxFiles   = 256
	instrMaxEntries = 4096
	instrMaxBytes   = 256 << 10
)

// instrRoots are where a session keeps instructions: its .claude folder (CLAUDE.md, skills,
// commands, agents, memory) and the folders the agent works in.
var instrRoots = []string{session.ClaudeDir, "outputs", "uploads"}

// instrSkip are folders of .claude that hold no instructions and may be large.
var instrSkip = map[string]bool{session.BridgeDir: true, ".claude/projects": true, ".claude/todos": true,
	".claude/shell-snapshots": true, ".claude/statsig": true, ".claude/plugins/cache": true, ".git": true, "node_modules": true}

// instructionScan is what the last scan saw: each file's stamp and findings.
type instructionScan struct {
	files map[string]scannedFile
	// reported is the findings last handed to health, to report only changes.
	reported map[string][]string
}

type scannedFile struct {
	size    int64
	mod     time.Time
	rules   []string
	blocked bool // a block rule matched (not one only asked about, nor one in observe)
}

// scanInstructions looks at the session's instruction files, judges those that changed, and
// reports what they hold now.
func (c *Collector) scanInstructions(s *session.Session, t *tracked, p *policy) {
	seen := map[string]scannedFile{}
	entries := 0
	for _, root := range instrRoots {
		c.walkInstructions(s, root, 0, &entries, func(name string, fi fs.FileInfo) {
			if len(seen) >= instrMaxFiles {
				return
			}
			if old, ok := t.instr.files[name]; ok && old.size == fi.Size() && old.mod.Equal(fi.ModTime()) {
				seen[name] = old // unchanged since it was judged
				return
			}
			seen[name] = judgeInstructions(s, name, fi, p.cls)
		})
	}
	t.instr.files = seen
	findings := map[string][]string{}
	var blocked []string
	for name, f := range seen {
		if len(f.rules) > 0 {
			findings[name] = f.rules
		}
		if f.blocked {
			blocked = append(blocked, name)
		}
	}
	if !maps.EqualFunc(findings, t.instr.reported, slices.Equal[[]string]) {
		for _, name := range slices.Sorted(maps.Keys(findings)) {
			if !slices.Equal(findings[name], t.instr.reported[name]) {
				c.log.Warn("an instruction file in the session holds text an agent would obey", "code", health.CodeInstructionFound,
					"session", t.id, "file", name, "rules", strings.Join(findings[name], ","))
			}
		}
		t.instr.reported = findings
		c.opts.Health.InstructionFindings(t.id, findings)
	}
	if len(blocked) > 0 && p.cfg.Mode == managedconfig.Enforce && p.cfg.Policy.QuarantineOnInjection && c.quarantine(t) == "" {
		slices.Sort(blocked)
		c.Quarantine(t.id, fmt.Sprintf("the instruction file %s holds text a block rule forbids (%s)", blocked[0], strings.Join(seen[blocked[0]].rules, ", ")))
	}
}

// walkInstructions calls fn for each instruction file below name, within the bounds, never
// through a link.
func (c *Collector) walkInstructions(s *session.Session, name string, depth int, entries *int, fn func(string, fs.FileInfo)) {
	if depth > instrMaxDepth || instrSkip[name] || *entries >= instrMaxEntries {
		return
	}
	list, err := s.ReadDir(name, instrMaxEntries-*entries)
	if err != nil {
		return // absent, a link, or not a folder: nothing to scan there
	}
	*entries += len(list)
	for _, e := range list {
		child := name + "/" + e.Name()
		switch {
		case e.Type().IsDir():
			if !instrSkip[e.Name()] {
				c.walkInstructions(s, child, depth+1, entries, fn)
			}
		case e.Type().IsRegular() && instructionName(child):
			if fi, err := e.Info(); err == nil && fi.Size() <= instrMaxBytes {
				fn(child, fi)
			}
		}
	}
}

// instructionName reports a file agents read as instructions: a known instruction file, or
// markdown under .claude or a memory folder.
func instructionName(name string) bool {
	if !classifier.InstructionFile(name) {
		return false
	}
	base := strings.ToLower(path.Base(name))
	return strings.HasSuffix(base, ".md") || base == ".cursorrules" || base == ".windsurfrules"
}

// judgeInstructions reads one file and judges its text.
func judgeInstructions(s *session.Session, name string, fi fs.FileInfo, cls *classifier.Classifier) scannedFile {
	f := scannedFile{size: fi.Size(), mod: fi.ModTime()}
	data, err := s.ReadFile(name, instrMaxBytes)
	if err != nil {
		return f
	}
	for _, v := range cls.InstructionFindings(string(data)) {
		f.rules = append(f.rules, v.RuleID)
		f.blocked = f.blocked || v.Decision == claudehook.Deny && !v.ObserveOnly
	}
	return f
}
