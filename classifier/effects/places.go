package effects

import (
	"strings"

	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
)

// criticalPath matches a path whose loss is the loss of a system or a home (see CriticalPath).
var criticalPath = lazyregexp.New(`^(/|/\*|~|~/\*|\.|\.\.|\*|\.\./.*|~/[^/]+|/(etc|usr|var|bin|sbin|lib|lib32|lib64|boot|opt|srv|System|Library|Applications|Users|home|root|private|dev|proc|sys|mnt|Volumes|sessions)(/[^/]+)?)/?$`)

// tempPath matches a path in a temporary folder.
var tempPath = lazyregexp.New(`^(/tmp|/var/tmp|/private/tmp|/private/var/folders|/var/folders|\$TMPDIR|\$\{TMPDIR\}|\$TMP|\$TEMP)(/|$)`)

// IsDotenv reports an environment file (.env, .env.local), not one of its templates
// (.env.example, .sample, .template, .dist), which are committed to be read. String tests, not
// a pattern: every path a command names is asked.
func IsDotenv(p string) bool {
	base := p[strings.LastIndexByte(p, '/')+1:]
	if base != ".env" && !(strings.HasPrefix(base, ".env.") && len(base) > len(".env.")) {
		return false
	}
	for _, t := range []string{".example", ".sample", ".template", ".dist"} {
		if base == ".env"+t {
			return false
		}
	}
	return true
}
