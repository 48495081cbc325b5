package buildinfo

import (
	"runtime"
	"strings"
	"testing"
)

func TestAReleaseStampIsTheVersionAndWithoutOneGoSays(t *testing.T) {
	if got := Version("v1.2.3"); got != "v1.2.3" {
		t.Errorf("Version(stamp) = %q", got)
	}
	if got := Version(""); !strings.HasSuffix(got, runtime.Version()) {
		t.Errorf("Version() = %q, want what Go recorded, ending in %s", got, runtime.Version())
	}
}
