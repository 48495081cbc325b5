// Package frontmatter reads the YAML frontmatter that Claude Code parses at the head of its
// markdown configuration files (skills, custom agents, legacy commands, output styles), delimited
// exactly as the CLI delimits it, and judges it by what it can make the CLI do: start a program,
// open a server, run a hook of any type, rewrite a call or loosen the CLI's own permissions.
//
// It accepts only a strict subset of YAML (one `key: value` entry a line at the top level, with
// lists, block scalars and nested members under it) and holds every key it does not know to be
// harmless: a frontmatter it cannot read as that subset, or whose end another of the CLI's
// parsers could place elsewhere, is held whole rather than guessed at, so a parser differential
// can only ever hold too much. A markdown body that runs inline shell (!`cmd` or a ```! block)
// is reported too.
//
// It reads bytes and answers; it does not find, read or write files (the injector does), and it
// knows nothing of the admin's allow-list beyond the names it is given.
package frontmatter

import (
	"bytes"
	"slices"
	"strings"

	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
	"github.com/coworkbridge/coworkbridge/internal/nameset"
)

// Kind is the kind of configuration file the CLI reads a frontmatter from; the harmless keys
// differ a little between them.
type Kind string

const (
	Skill       Kind = "skill"
	Agent       Kind = "agent"
	Command     Kind = "command"
	OutputStyle Kind = "output-style"
)

// Verdict is what Judge found in one file.
type Verdict struct {
	// Whole, when set, says why the file cannot be judged key by key and must be held whole: its
	// frontmatter is not the subset this package reads, or its end is ambiguous.
	Whole string
	// Held are the frontmatter keys that can start a program, run a hook or loosen permissions,
	// or that are not known to be harmless, in the order they stand.
	Held []string
	// Shell is set when the body runs inline shell commands when the skill or command is used.
	Shell bool
	// Keep is the file with the held keys' entries taken out, byte for byte otherwise; nil when
	// nothing is held or the file must go whole.
	Keep []byte
}

// Clean reports whether the file may stand as it is.
func (v Verdict) Clean() bool { return v.Whole == "" && len(v.Held) == 0 && !v.Shell }

// Reasons lists what the verdict holds, for reports: "hooks", "shell: inline commands", ...
func (v Verdict) Reasons() []string {
	var r []string
	if v.Whole != "" {
		r = append(r, v.Whole)
	}
	r = append(r, v.Held...)
	if v.Shell {
		r = append(r, "inline shell commands")
	}
	return r
}

// harmless are the keys that only describe, choose a model, narrow the tools, or name other
// configuration that is judged on its own (a skill's agent, an agent's skills). Taken from the
// keys CLI 2.1.332 reads (its own list of known keys and its parsers), less every one that
// starts something: hooks (and hook events written at the top level), shell, mcpServers,
// lspServers, settings, monitors, channels, workflows, dependencies, userConfig and the
// plugin-manifest keys.
var harmless = nameset.Of(
	"name", "description", "model", "allowed-tools", "argument-hint",
	"arguments", "disable-model-invocation", "user-invocable", "effort",
	"version", "when_to_use", "paths", "context", "agent",
	"metadata", "displayName", "author", "homepage", "repository",
	"license", "keywords", "compatibility", "tools", "disallowedTools",
	"color", "maxTurns", "autoCompactWindow", "initialPrompt", "memory",
	"background", "omitClaudeMd", "isolation", "keep-coding-instructions",
	"hide-from-slash-command-tool",
)

// harmlessFor are keys harmless in one kind only: an agent's skills are names of skills the CLI
// loads from their own (judged) files; elsewhere the key names folders of a plugin.
var harmlessFor = [...]kindKey{{Agent, "skills"}}

type kindKey struct {
	kind Kind
	key  string
}

// modes are the permissionMode values that do not loosen the CLI's own permission rules.
var modes = nameset.Of("default", "acceptEdits", "plan", "dontAsk")

// Judge reads data, a file of kind k, and says what in it the CLI would act on that is not
// known to be harmless. allow names keys the admin admits for this file.
func Judge(k Kind, data []byte, allow func(key string) bool) Verdict {
	fm, ok, whole := Split(data)
	var v Verdict
	v.Shell = (k == Skill || k == Command) && InlineShell(data)
	if whole != "" {
		v.Whole = whole
		return v
	}
	if !ok {
		return v
	}
	entries, problem := parse(data[fm.Start:fm.End])
	if problem != "" {
		v.Whole = "frontmatter " + problem
		return v
	}
	var cut [][2]int
	for _, e := range entries {
		if keyHarmless(k, e) || allow != nil && allow(e.key) {
			continue
		}
		v.Held = append(v.Held, e.key)
		cut = append(cut, [2]int{fm.Start + e.start, fm.Start + e.end})
	}
	if len(cut) > 0 {
		v.Keep = without(data, cut)
	}
	return v
}

func keyHarmless(k Kind, e entry) bool {
	if e.key == "permissionMode" {
		return modes.Has(strings.Trim(e.scalar, `"'`))
	}
	return harmless.Has(e.key) || slices.Contains(harmlessFor[:], kindKey{k, e.key})
}

// without is data less the byte ranges in cut (sorted, apart).
func without(data []byte, cut [][2]int) []byte {
	out := make([]byte, 0, len(data))
	at := 0
	for _, c := range cut {
		out = append(out, data[at:c[0]]...)
		at = c[1]
	}
	return append(out, data[at:]...)
}

// Span is where a frontmatter's YAML text stands in a file.
type Span struct{ Start, End int }

// jsSpace is JavaScript's \s, which the CLI's delimiting expression uses.
const jsSpace = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"

// Split finds the frontmatter as the CLI does: after a byte-order mark, "---", then white space
// up to a last line break, then the text up to the first "---" wherever it stands (the CLI's
// expression is /^---\s*\n([\s\S]*?)---\s*\n?/). ok is false when the CLI sees no frontmatter.
// whole is set when another parser of the CLI, which wants the closing "---" alone on its line,
// would end it elsewhere: which of the two reads a file must not decide what is judged.
func Split(data []byte) (fm Span, ok bool, whole string) {
	e := bytes.TrimPrefix(data, []byte("\ufeff"))
	off := len(data) - len(e)
	if !bytes.HasPrefix(e, []byte("---")) || !bytes.Contains(e[3:], []byte("---")) {
		return Span{}, false, ""
	}
	rest := string(e[3:])
	ws := len(rest) - len(strings.TrimLeft(rest, jsSpace))
	nl := strings.LastIndexByte(rest[:ws], '\n')
	if nl < 0 {
		return Span{}, false, ""
	}
	start := 3 + nl + 1
	end := bytes.Index(e[start:], []byte("---"))
	if end < 0 {
		return Span{}, false, ""
	}
	end += start
	if end > start && e[end-1] != '\n' || !closingLine(e[end+3:]) {
		return Span{}, false, `the closing "---" does not stand alone on its line, so the CLI's parsers disagree where the frontmatter ends`
	}
	return Span{off + start, off + end}, true, ""
}

// closingLine reports whether what follows a closing "---" ends its line with blanks only.
func closingLine(after []byte) bool {
	line, _, _ := bytes.Cut(after, []byte("\n"))
	return len(bytes.Trim(line, " \t\r")) == 0
}

// inlineShell matches the CLI's inline commands: !`cmd` after a blank or a line start, and
// fenced ```! blocks. Anything that looks like either counts, quoted or not.
var inlineShell = lazyregexp.New("(?m)(^|\\s)!`|```!")

// InlineShell reports whether a skill or command file runs shell commands when it is used.
func InlineShell(data []byte) bool { return inlineShell.Match(data) }

// starters are the held keys that start something or loosen permissions (as opposed to keys held
// only because they are not known): in a Cowork session nothing but an attempt on the guard
// writes them.
var starters = nameset.Of(
	"hooks", "mcpServers", "lspServers", "shell", "settings",
	"monitors", "channels", "workflows", "permissionMode", "agents",
	"commands", "skills", "dependencies", "userConfig",
)

// Dangerous reports whether a held key starts something or loosens permissions; a hook event
// written at the top level (PreToolUse, ...) counts.
func Dangerous(key string) bool {
	return starters.Has(key) || key != "" && key[0] >= 'A' && key[0] <= 'Z'
}
