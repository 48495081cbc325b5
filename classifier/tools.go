package classifier

import (
	"github.com/coworkbridge/coworkbridge/internal/lazy"
	"github.com/coworkbridge/coworkbridge/internal/nameset"
)

// The rule layer's knowledge of programs: which fetch the URLs they are handed, which write the
// files they name, and which only read settings files. The lower layers keep theirs in
// facts/programs.go, facts/capabilities.txt (with the table generated from it) and effects/tools.go.

// settingsReaders only read the files they name (sed and yq without -i).
var settingsReaders = map[string]bool{"cat": true, "less": true, "more": true, "head": true, "tail": true, "bat": true,
	"grep": true, "egrep": true, "fgrep": true, "rg": true, "jq": true, "yq": true, "sed": true, "wc": true, "diff": true,
	"cmp": true, "file": true, "stat": true, "ls": true, "md5sum": true, "shasum": true, "sha256sum": true, "od": true,
	"xxd": true, "hexdump": true, "strings": true, "plutil": false}

// folderTools are commands that, given the .claude folder itself, can move, link, replace or
// change it.
var folderTools = nameset.Of("ln", "mv", "cp", "rm", "rmdir", "unlink", "chmod",
	"chown", "chflags", "chattr", "mkfifo", "mknod", "rsync", "install", "touch", "truncate")

// fetchesURLs are programs whose URL arguments are judged by the url rules.
var fetchesURLs = nameset.Of("curl", "wget", "http", "https", "xh", "aria2c",
	"lwp-request", "GET", "POST", "open", "fetch")

// writers are commands that write files their arguments name; copiers write only the last.
var writers = nameset.Of("cp", "mv", "install", "tee", "ln", "touch", "dd", "truncate", "chmod")

var copiers = nameset.Of("cp", "install", "ln", "rsync", "scp", "ditto")

// readerValueOpts are options of readers whose value is not a file read: sort -o OUT writes it,
// less -p PATTERN searches for it.
var readerValueOpts = lazy.Value[map[string]map[string]bool]{Make: func() map[string]map[string]bool {
	return map[string]map[string]bool{
		"sort": {"-o": true, "--output": true, "-t": true, "-k": true, "-S": true, "-T": true, "--field-separator": true, "--key": true},
		"less": {"-p": true, "-P": true, "-j": true, "-x": true, "-y": true, "-h": true, "-b": true, "-t": true, "--pattern": true},
		"head": {"-n": true, "-c": true}, "tail": {"-n": true, "-c": true},
	}
}}
