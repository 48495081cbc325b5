package claudehook

import (
	"strconv"
	"strings"
)

// OnFailureSince is the oldest Claude Code release known to honour onFailure: the one it was
// verified with. Releases between the schema's 2.1.220 and it were never tried, so they count as
// not honouring it: a warning that proves needless costs an admin a look, a missing one a guard
// that a killed hook turns off.
const OnFailureSince = "2.1.329"

// maxVersionLen bounds a version string taken from session data.
const maxVersionLen = 32

// ParseVersion reads a Claude Code version, "MAJOR.MINOR.PATCH" with an optional suffix after
// '-' or '+' (ignored). It reports false for anything else.
func ParseVersion(s string) ([3]int, bool) {
	var v [3]int
	if len(s) == 0 || len(s) > maxVersionLen {
		return v, false
	}
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return v, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || p == "" || p[0] == '+' || len(p) > 1 && p[0] == '0' {
			return v, false
		}
		v[i] = n
	}
	return v, true
}

// VersionBefore reports whether version a is older than b; false when either does not parse.
func VersionBefore(a, b string) bool {
	va, ok := ParseVersion(a)
	vb, ok2 := ParseVersion(b)
	if !ok || !ok2 {
		return false
	}
	for i := range va {
		if va[i] != vb[i] {
			return va[i] < vb[i]
		}
	}
	return false
}

// HonoursOnFailure reports whether a CLI of this version is known to block on a failed hook.
func HonoursOnFailure(version string) bool { return !VersionBefore(version, OnFailureSince) }
