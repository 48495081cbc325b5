package effects

import (
	"maps"
	"slices"
)

// IsReader reports a program whose path arguments are files it reads (cat, head, grep, cp):
// what such a program is handed is judged by the read rules, option by option.
func IsReader(name string) bool { return readers.Has(name) }

// CriticalPath reports a path whose loss is the loss of a system or a home: the root, a home,
// system folders and their first level, ., .., *.
func CriticalPath(p string) bool { return criticalPath.MatchString(p) }

// TempPath reports a path in a temporary folder.
func TempPath(p string) bool { return tempPath.MatchString(p) }

// RemoteSpec reports an scp or rsync destination on another host (host:path, user@host:path).
func RemoteSpec(s string) bool { return remoteSpec.MatchString(s) }

// MentionsSecretVar reports text that names an environment variable holding a secret
// ($GITHUB_TOKEN, ${AWS_SECRET_ACCESS_KEY}).
func MentionsSecretVar(s string) bool { return secretVar.MatchString(s) }

// DataOptions are the options through which a known sender (curl, wget, httpie) sends data, in
// order.
func DataOptions(prog string) []string { return slices.Sorted(maps.Keys(sendOptions.Get()[prog])) }
