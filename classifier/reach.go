package classifier

import (
	"net/netip"
	"strings"

	"github.com/coworkbridge/coworkbridge/classifier/effects"
	"github.com/coworkbridge/coworkbridge/classifier/facts"

	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
)

// The reach of a program the policy does not know. A program outside the allowed list and the
// capability table is not asked about for its name alone: what it is handed is judged like any
// program's (effect.open-secret, effect.open-persistence, the redirection and read rules), and it
// is asked about only when it reaches beyond the project: a network destination in its
// arguments, a system folder, a home's hidden folders or Library, a device, another user's home;
// or when it runs from a temporary or hidden folder, is an interpreter (its code is read only in
// part), or its name is only known at run time.
// sw_vers, system_profiler SPHardwareDataType and ./build.sh pass; smbclient //host/share, an
// unknown tool handed /etc/pam.d or ~/.kube, and /tmp/.x/agent are asked about.

// networkArg is an argument naming a place on the network: a URL, user@host:, host:port, a
// UNC share, an address.
var networkArg = lazyregexp.New(`(?i)^[a-z][a-z0-9+.-]*://[^/\s]|^[\w.-]+@[\w-]+(\.[\w-]+)+(:|$)|^\\\\[\w.-]+\\|` +
	`^(?:[a-z0-9-]+\.)+(?:com|net|org|io|dev|app|co|me|sh|xyz|info|biz|ru|cn|top|site|online|example|test|invalid|onion|cloud|ai|tk|ml|ga|gq|cf|pw|cc|su|local)(?::\d+)?(?:/\S*)?$|` +
	`^[\w.-]+:\d{2,5}$|^(?:tcp|udp|ssl|openssl|sctp|dccp)[46]?(?:-connect|-listen|-l)?:`)

// sensitiveArea are places outside any project that an unknown program should not be handed
// unasked: the system's folders, a home's hidden folders and Library, devices, other homes.
var sensitiveArea = lazyregexp.New(`^/(etc|private|System|Library|usr|bin|sbin|var|boot|root|opt|Applications|Volumes|proc|sys)(/|$)|` +
	`^~/(\.[^/]+|Library)(/|$)|^/dev/(?:disk|rdisk|sd|nvme|hd|mem|kmem|port|tcp|udp)|^/(Users|home)/`)

// harmlessArea are the parts of those places every program reads: shared data, null devices.
var harmlessArea = lazyregexp.New(`^/(usr/(share|local/share|lib)|dev/(null|zero|u?random|std(in|out|err)|fd/|tty))(/|$)|^/var/folders/|^/usr/bin/env$`)

// unknownReach reports what an unknown program reaches beyond the project, if anything.
func unknownReach(_ *Classifier, it item) (string, bool) {
	cmd := it.cmd
	if cmd == nil {
		return "", false
	}
	if cmd.Dynamic {
		return cmd.Name + " (a program only known at run time)", true
	}
	if facts.InterpreterFlag(cmd.Name) != "" || facts.IsShell(cmd.Name) {
		return cmd.Name + " runs code in a language this organisation has not listed", true
	}
	// A script outside the project (a vendor's CLI in Downloads) that was read is judged by what it
	// runs; one left unread, or a compiled program, is whatever the file there is.
	if exe := facts.CanonPath(cmd.Exe, it.cwd); cmd.Exe != "" && (effects.Throwaway(exe) || outsideProject(exe, it.project) && (it.an == nil || !it.an.ReadScript(cmd))) {
		return cmd.Name + " runs from " + exe, true
	}
	for _, a := range cmd.Args {
		v := a
		if _, value, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "-") {
			v = value
		}
		if networkArg.MatchString(v) || isAddress(v) {
			return cmd.Name + " reaches " + v, true
		}
	}
	for _, pa := range append(effects.PathValues(cmd), effects.EmbeddedPaths(cmd)...) {
		if p := facts.CanonPath(pa.Value, it.cwd); sensitiveArea.MatchString(p) && !harmlessArea.MatchString(p) && !inProject(p, it.project) {
			return cmd.Name + " is handed " + p, true
		}
	}
	return "", false
}

// isAddress reports an IP address, with or without a port.
func isAddress(s string) bool {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().IsValid()
	}
	a, err := netip.ParseAddr(s)
	return err == nil && (a.Is4() || strings.Count(s, ":") >= 2)
}

// programFolders are where installed programs live: one run from there by its path is the
// program its name says, not one the agent put somewhere.
var programFolders = lazyregexp.New(`^(/usr/(local/)?s?bin|/s?bin|/opt/homebrew/s?bin|/opt/local/s?bin|/usr/libexec|/Library/Developer/CommandLineTools/usr/bin|/Applications/Xcode\.app/Contents/Developer/usr/bin|~/(\.local|go|\.cargo|\.bun|\.deno|\.npm-global|\.volta|\.nvm/versions/node/[^/]+)/bin|/nix/store/[^/]+/bin)/[^/]+$`)

// outsideProject reports a program run by a path that is neither in the project nor among the
// installed programs (/opt/tools/x, ~/Downloads/x): it is whatever the file there is.
func outsideProject(exe string, project []string) bool {
	return (strings.HasPrefix(exe, "/") || strings.HasPrefix(exe, "~")) && !inProject(exe, project) && !programFolders.MatchString(exe)
}
