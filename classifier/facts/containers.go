package facts

import (
	"slices"
	"strings"

	"github.com/coworkbridge/coworkbridge/internal/nameset"
	"mvdan.cc/sh/v3/syntax"
)

// Container runtimes run a command line of their own inside a container: docker exec BOX sh -c
// '…', kubectl exec POD -- sh -c '…'. What runs there is judged like any other command.

var containerRuntimes = nameset.Of("docker", "podman", "nerdctl", "finch", "lima", "colima")

// containerFlags are the runtimes' run and exec options that take no value; every other option
// written without = takes the next word.
var containerFlags = nameset.Of("-d", "--detach", "-i", "--interactive", "-t", "--tty", "--rm", "--privileged", "--init",
	"-P", "--publish-all", "--read-only", "--sig-proxy", "--no-healthcheck", "--oom-kill-disable", "-q", "--quiet",
	"--disable-content-trust", "--help")

// containerCommand is the command line a container runtime runs inside a container, quoted for
// the shell; "" when it runs none.
func containerCommand(cmd *Command) string {
	ops := cmd.Args
	switch {
	case containerRuntimes.Has(cmd.Name):
		i := slices.IndexFunc(ops, func(a string) bool { return !strings.HasPrefix(a, "-") })
		if i < 0 {
			return ""
		}
		sub := ops[i]
		rest := ops[i+1:]
		if sub == "container" && len(rest) > 0 { // docker container exec
			sub, rest = rest[0], rest[1:]
		}
		if sub != "exec" && sub != "run" && sub != "create" {
			return ""
		}
		// skip the options, then the container or image: what follows is the command
		for j := 0; j < len(rest); j++ {
			a := rest[j]
			switch {
			case a == "--":
				continue
			case strings.HasPrefix(a, "-"):
				if !strings.Contains(a, "=") && !containerFlags.Has(a) && !shortFlags(a, "dit") && j+1 < len(rest) {
					j++
				}
			default:
				return quoteAll(rest[j+1:])
			}
		}
	case cmd.Name == "kubectl" || cmd.Name == "oc":
		if i := slices.Index(ops, "--"); i >= 0 && len(ops) > 0 && (slices.Contains(ops[:i], "exec") || slices.Contains(ops[:i], "run") || slices.Contains(ops[:i], "debug")) {
			return quoteAll(ops[i+1:])
		}
	}
	return ""
}

// shortFlags reports a bundle of short flags made only of letters (-it, -dit).
func shortFlags(a, letters string) bool {
	if len(a) < 3 || a[0] != '-' || a[1] == '-' {
		return false
	}
	for _, c := range a[1:] {
		if !strings.ContainsRune(letters, c) {
			return false
		}
	}
	return true
}

// quoteAll joins words into a command line that splits back into them.
// QuoteWords writes words as one command line, each quoted for the shell where it needs it.
func QuoteWords(words []string) string { return quoteAll(words) }

func quoteAll(words []string) string {
	q := make([]string, 0, len(words))
	for _, w := range words {
		s, err := syntax.Quote(w, syntax.LangBash)
		if err != nil {
			s = w
		}
		q = append(q, s)
	}
	return strings.Join(q, " ")
}
