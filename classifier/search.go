package classifier

import (
	"path"
	"slices"
	"strings"

	"github.com/coworkbridge/coworkbridge/classifier/facts"
)

// A search reaches everything below where it starts: a Grep or Glob at ~, find ~ or grep -r in
// the home returns what the map protects below it (another session's files, the decision log)
// without naming it. So the folder a search starts from is judged as reaching every protected
// place inside it (item.search), whatever it is spelt.

// searchRoots are the folders a shell command searches recursively, as written ("." for the
// working folder where it names none); nil for a command that searches nothing.
func searchRoots(cmd *facts.Command) []string {
	switch cmd.Name {
	case "find", "fd", "fdfind", "tree", "du":
		return leadingOperands(cmd.Args)
	case "grep", "egrep", "fgrep", "zgrep", "ggrep":
		if !recursiveFlag(cmd.Args, "rR", "--recursive", "--dereference-recursive") {
			return nil
		}
		return patternOperands(cmd.Args)
	case "rg", "ag", "ack", "ugrep", "pt", "sift":
		return patternOperands(cmd.Args)
	case "ls":
		if !recursiveFlag(cmd.Args, "R", "--recursive") {
			return nil
		}
		return orHere(facts.Operands(cmd.Args))
	case "cp", "scp", "rsync", "zip", "chmod", "chown", "chgrp":
		if !recursiveFlag(cmd.Args, "rRa", "--recursive", "--archive") {
			return nil
		}
		ops := facts.Operands(cmd.Args)
		if cmd.Name == "cp" || cmd.Name == "scp" || cmd.Name == "rsync" || cmd.Name == "zip" {
			// The destination (cp, rsync) or the archive (zip) is written, not searched.
			if cmd.Name == "zip" && len(ops) > 0 {
				ops = ops[1:]
			} else if len(ops) > 1 {
				ops = ops[:len(ops)-1]
			}
		}
		return ops
	case "tar", "bsdtar", "gtar":
		return tarRoots(cmd.Args)
	}
	return nil
}

// findAction reports find's and fd's actions that do more than print a name: run a program on
// each file, delete it, or write a listing elsewhere.
func findAction(a string) bool {
	switch a {
	case "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls", "-x", "--exec", "-X", "--exec-batch":
		return true
	}
	return false
}

// nameFilter reports programs that take a search's list of names and read no file of it.
func nameFilter(name string) bool {
	switch name {
	case "head", "tail", "sort", "uniq", "wc", "grep", "egrep", "fgrep", "rg", "cut", "tr", "column", "nl", "less", "more", "cat":
		return true
	}
	return false
}

// listsNames reports a search that only lists names: find, fd, tree, du or ls -R without an action
// that runs a program or deletes, in a command whose every other part only filters or prints
// that list (sort, head, grep), none through xargs: a loop, a substitution or a program handed
// the names could read the files they name.
func listsNames(cmd *facts.Command, an *facts.Analysis) bool {
	lister := func(c facts.Command) bool {
		switch c.Name {
		case "find", "fd", "fdfind", "tree", "du", "ls":
			return !slices.ContainsFunc(c.Args, findAction)
		}
		return false
	}
	filter := func(c facts.Command) bool {
		return nameFilter(c.Name) && !slices.Contains(c.Wrappers, "xargs") && !(c.Name == "cat" && len(facts.Operands(c.Args)) > 0)
	}
	if !lister(*cmd) || len(an.Dynamic) > 0 || len(an.Code) > 0 {
		return false
	}
	for _, c := range an.Commands {
		if c.Dynamic || c.Function || !lister(c) && !filter(c) ||
			slices.ContainsFunc(c.Args, func(a string) bool { return strings.ContainsAny(a, "$`") }) {
			return false
		}
	}
	return true
}

// recursiveFlag reports a short option bundle holding one of short, or one of long.
func recursiveFlag(args []string, short string, long ...string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		for _, l := range long {
			if a == l || strings.HasPrefix(a, l+"=") {
				return true
			}
		}
		if len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsAny(a[1:], short) {
			return true
		}
	}
	return false
}

func orHere(ops []string) []string {
	if len(ops) == 0 {
		return []string{"."}
	}
	return ops
}

// leadingOperands are find's starting points: the operands before its expression.
func leadingOperands(args []string) []string {
	var out []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") || a == "(" || a == "!" || a == "\\(" {
			break
		}
		out = append(out, a)
	}
	return orHere(out)
}

// patternOperands are grep's folders: the operands after its pattern (which -e, -f or --regexp
// give instead).
func patternOperands(args []string) []string {
	ops := facts.Operands(args)
	given := false
	for _, a := range args {
		if a == "-e" || a == "-f" || strings.HasPrefix(a, "--regexp") || strings.HasPrefix(a, "--file") {
			given = true
		}
	}
	if !given && len(ops) > 0 {
		ops = ops[1:]
	}
	return orHere(ops)
}

// tarRoots are what tar archives: its operands but the archive after f, and the folders -C
// moves to.
func tarRoots(args []string) []string {
	var out []string
	skipArchive := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-C" || a == "--directory":
			if i+1 < len(args) {
				out = append(out, args[i+1])
				i++
			}
		case strings.HasPrefix(a, "--directory="):
			out = append(out, strings.TrimPrefix(a, "--directory="))
		case a == "-f" || a == "--file":
			i++
		case strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.HasSuffix(a, "f"):
			i++ // -czf out.tgz
		case strings.HasPrefix(a, "-"):
		case i == 0 && !strings.HasPrefix(a, "-") && strings.Contains(a, "f"):
			skipArchive = true // the old bundle: tar czf out.tgz dir
		case skipArchive:
			skipArchive = false
		default:
			out = append(out, a)
		}
	}
	return out
}

// globbed reports whether a path holds a pattern its tool or shell expands.
func globbed(p string) bool { return strings.ContainsAny(p, "*?[") }

// globReaches reports whether pattern p (canonical) can name dir or something inside it, and
// whether it can name only a folder above dir (which matters to a search). Each segment is
// matched in any case; ** matches any number of segments.
func globReaches(p, dir string) (inside, above bool) {
	ps, ds := segments(p), segments(dir)
	for i, seg := range ps {
		if seg == "**" {
			return true, true
		}
		if i == len(ds) {
			return true, false
		}
		if ok, _ := path.Match(strings.ToLower(seg), strings.ToLower(ds[i])); !ok {
			return false, false
		}
	}
	return len(ps) == len(ds), len(ps) < len(ds)
}

func segments(p string) []string {
	if p == "/" {
		return []string{""}
	}
	return strings.Split(p, "/")
}

// changedDir is where cd or pushd takes the working folder from dir; ok is false for any other
// command, and for one whose folder is only known at run time (cd "$(…)", cd -), after which
// dir is kept: a guess the map's residue in THREATS.md accounts for.
func changedDir(cmd *facts.Command, dir string) (string, bool) {
	if cmd.Name != "cd" && cmd.Name != "pushd" || cmd.PipesTo != "" || cmd.PipedFrom != "" {
		return "", false
	}
	ops := facts.Operands(cmd.Args)
	switch {
	case len(ops) == 0:
		return "~", true
	case ops[0] == "-" || strings.ContainsAny(ops[0], "$`"):
		return "", false
	}
	return facts.CanonPath(ops[0], dir), true
}
