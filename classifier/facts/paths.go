package facts

import (
	"cmp"
	"path"
	"strings"

	"golang.org/x/text/unicode/norm"

	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
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
		if HasPrefixFold(p, h) && (len(p) == len(h) || p[len(h)] == '/') {
			return len(h)
		}
	}
	for _, h := range []string{"/home/", "/Users/"} {
		if HasPrefixFold(p, h) {
			rest := p[len(h):]
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

// HasPrefixFold is strings.HasPrefix in any case: a Mac's volume does not tell /USERS from /Users.
func HasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// macAliases are other names macOS gives the same folders: the data volume's firmlinks
// (/System/Volumes/Data/Users is /Users) and /private's folders (/var is /private/var). A path is
// written under the name the rules use: the firmlink's, and /var, /etc, /tmp.
func foldAliases(p string) string {
	const data = "/System/Volumes/Data"
	if HasPrefixFold(p, data) && (len(p) == len(data) || p[len(data)] == '/') {
		p = p[len(data):]
		if p == "" {
			return "/"
		}
	}
	for _, d := range []string{"/private/var", "/private/etc", "/private/tmp"} {
		if HasPrefixFold(p, d) && (len(p) == len(d) || p[len(d)] == '/') {
			return p[len("/private"):]
		}
	}
	return p
}

// CanonPath cleans a path, resolves it against cwd, writes the Mac's aliases of a folder under
// one name (foldAliases) and any home folder as ~, and composes its Unicode (a Mac's volume
// takes é written either way for the same name), so that one rule covers the Mac's /Users/ada,
// /System/Volumes/Data/Users/ada, the VM's /root or /home/ada, and $HOME. It keeps the case:
// rules and the map compare paths in any case.
func CanonPath(p, cwd string) string {
	if p == "" {
		return ""
	}
	p = procAlias(p, cwd)
	switch {
	case strings.HasPrefix(p, "~"): // ~, ~/x, ~ada/x
	case strings.HasPrefix(p, "/"), strings.HasPrefix(p, "$"):
	case cwd != "":
		p = cwd + "/" + p
	}
	p = foldAliases(path.Clean(p))
	if !isASCII(p) {
		p = norm.NFC.String(p)
	}
	if n := homeLen(p); n >= 0 {
		p = "~" + p[n:]
	}
	return p
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// procFolder is a process's working or root folder in Linux's /proc: /proc/self/cwd/../.ssh is
// the folder above the caller's working folder, which cleaning the name as written would lose
// (/proc/self/.ssh). Any process stands for the caller: $$, $BASHPID, a number or a pattern over
// them all name a process of the same call, or one the analysis cannot know better.
var procFolder = lazyregexp.New(`^/proc/[^/]+/(cwd|root)(/.*)?$`)

// procAlias is p with a /proc working folder written as the folder cwd (a process of the same
// call starts there), and a /proc root folder as /. Without cwd, a working folder is left
// unknown: its path is written as cwd is, relative.
func procAlias(p, cwd string) string {
	if !strings.HasPrefix(p, "/proc/") {
		return p
	}
	m := procFolder.FindStringSubmatch(p)
	if m == nil {
		return p
	}
	rest := strings.TrimPrefix(m[2], "/")
	if m[1] == "root" {
		return "/" + rest
	}
	if cwd == "" {
		return "./" + rest
	}
	return cwd + "/" + rest
}
