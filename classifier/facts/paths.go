package facts

import (
	"cmp"
	"path"
	"strings"
)

// LooksLikePath reports an argument written as a path (with a / or ~, starting with a dot, or
// dd's of=), not a bare word that may be a name, a pattern or a subcommand.
func LooksLikePath(s string) bool {
	return strings.ContainsAny(s, "/~") || strings.HasPrefix(s, ".") || strings.HasPrefix(s, "of=")
}

// homeLen is the length of the home folder a path starts with (/root, /home/NAME, /Users/NAME,
// /var/root, $HOME, ${HOME}, ~NAME), or -1. Written out rather than as a pattern: every path of
// every command goes through it, and a pattern's matcher costs an allocation per call.
func homeLen(p string) int {
	for _, h := range []string{"/root", "/var/root", "/private/var/root", "$HOME", "${HOME}"} {
		if strings.HasPrefix(p, h) && (len(p) == len(h) || p[len(h)] == '/') {
			return len(h)
		}
	}
	for _, h := range []string{"/home/", "/Users/"} {
		if rest, ok := strings.CutPrefix(p, h); ok {
			if n := strings.IndexByte(rest, '/'); n != 0 && rest != "" {
				return len(h) + cmp.Or(max(n, 0), len(rest))
			}
		}
	}
	if len(p) > 1 && p[0] == '~' && (p[1] >= 'a' && p[1] <= 'z' || p[1] == '_') {
		n := 2
		for n < len(p) && p[n] != '/' && (p[n] >= 'a' && p[n] <= 'z' || p[n] >= '0' && p[n] <= '9' || strings.IndexByte("_.-", p[n]) >= 0) {
			n++
		}
		if n == len(p) || p[n] == '/' {
			return n
		}
	}
	return -1
}

// CanonPath cleans a path, resolves it against cwd, and writes any home folder as ~, so that one
// rule covers the Mac's /Users/ada, the VM's /root or /home/ada, and $HOME.
func CanonPath(p, cwd string) string {
	if p == "" {
		return ""
	}
	switch {
	case strings.HasPrefix(p, "~"): // ~, ~/x, ~ada/x
	case strings.HasPrefix(p, "/"), strings.HasPrefix(p, "$"):
	case cwd != "":
		p = cwd + "/" + p
	}
	p = path.Clean(p)
	if n := homeLen(p); n >= 0 {
		p = "~" + p[n:]
	}
	return p
}
