package effects

// What programs do, by name and option, as tables: what they send, print, switch off, install,
// delete, change and read. Branches elsewhere consult these; program knowledge stays here and in
// facts' capability table.

import (
	"strings"

	"github.com/coworkbridge/coworkbridge/classifier/facts"
	"github.com/coworkbridge/coworkbridge/internal/lazy"
	"github.com/coworkbridge/coworkbridge/internal/nameset"
)

// Tool knowledge: what the programs agents use do, as data. effects.go reads these tables; a new
// tool is a row here, not a branch there.

// dataForm is how an option's value says what it sends.
type dataForm int

const (
	formData      dataForm = iota // "@path" a file, "@-" stdin, anything else literal data
	formLiteral                   // literal data
	formForm                      // "name=@path" or "name=<path" a file, else literal
	formFile                      // a path ("-" stdin)
	formURLEncode                 // "name@path" or "@path" a file, else literal
)

// sendOptions are the options of network clients whose value leaves the machine.
var sendOptions = lazy.Value[map[string]map[string]dataForm]{Make: func() map[string]map[string]dataForm {
	return map[string]map[string]dataForm{
		"curl": {
			"-d": formData, "--data": formData, "--data-ascii": formData, "--data-binary": formData,
			"--data-raw": formLiteral, "--data-urlencode": formURLEncode, "--json": formData,
			"-F": formForm, "--form": formForm, "--form-string": formLiteral,
			"-T": formFile, "--upload-file": formFile,
		},
		"wget": {"--post-data": formLiteral, "--post-file": formFile, "--body-data": formLiteral, "--body-file": formFile},
	}
}}

// subcommand is a program and the words after it (options skipped) that make one action.
type subcommand struct {
	prog  string
	words []string
	// anyFlag, when set, must also be among the arguments (security find-generic-password -w).
	anyFlag []string
	// test, when set, must hold too: what a table row cannot say.
	test func(*facts.Command) bool
	what string
}

// quarantineRemoval: xattr deleting or clearing com.apple.quarantine (-d, -c, -rd...), not
// printing it (-p).
func quarantineRemoval(cmd *facts.Command) bool {
	for _, a := range cmd.Args {
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a, "dc") {
			return true
		}
	}
	return false
}

// credentialCommands print a credential for the agent to read: a token, a password, a key.
var credentialCommands = []subcommand{
	{prog: "gh", words: []string{"auth", "token"}, what: "GitHub token"},
	{prog: "gh", words: []string{"auth", "status"}, anyFlag: []string{"--show-token", "-t"}, what: "GitHub token"},
	{prog: "gcloud", words: []string{"auth", "print-access-token"}, what: "Google Cloud token"},
	{prog: "gcloud", words: []string{"auth", "print-identity-token"}, what: "Google Cloud token"},
	{prog: "gcloud", words: []string{"auth", "application-default", "print-access-token"}, what: "Google Cloud token"},
	{prog: "aws", words: []string{"configure", "export-credentials"}, what: "AWS credentials"},
	{prog: "aws", words: []string{"configure", "get", "aws_secret_access_key"}, what: "AWS secret key"},
	{prog: "aws", words: []string{"ecr", "get-login-password"}, what: "AWS registry password"},
	{prog: "aws", words: []string{"sts", "get-session-token"}, what: "AWS session credentials"},
	{prog: "az", words: []string{"account", "get-access-token"}, what: "Azure token"},
	{prog: "security", words: []string{"find-generic-password"}, anyFlag: []string{"-w", "-g"}, what: "a keychain password"},
	{prog: "security", words: []string{"find-internet-password"}, anyFlag: []string{"-w", "-g"}, what: "a keychain password"},
	{prog: "security", words: []string{"dump-keychain"}, anyFlag: []string{"-d"}, what: "the keychain"},
	{prog: "security", words: []string{"export"}, what: "keychain items"},
	{prog: "op", words: []string{"read"}, what: "a 1Password secret"},
	{prog: "op", words: []string{"item", "get"}, anyFlag: []string{"--reveal", "--fields"}, what: "a 1Password secret"},
	{prog: "kubectl", words: []string{"config", "view"}, anyFlag: []string{"--raw", "--flatten"}, what: "Kubernetes credentials"},
	{prog: "heroku", words: []string{"auth:token"}, what: "Heroku token"},
	{prog: "vault", words: []string{"print", "token"}, what: "Vault token"},
	{prog: "git", words: []string{"credential", "fill"}, what: "git credentials"},
	{prog: "git-credential-osxkeychain", words: []string{"get"}, what: "git credentials"},
	{prog: "doctl", words: []string{"auth", "token"}, what: "DigitalOcean token"},
}

// credentialConsumers take a credential on their standard input without showing it: a token
// piped straight into one never reaches the agent (aws ecr get-login-password | docker login).
var credentialConsumers = nameset.Of("docker", "podman", "helm", "oras", "crane",
	"skopeo", "nerdctl", "buildah", "finch", "cosign", "pbcopy")

// securityOff are commands that switch a protection of the Mac (or the VM) off.
var securityOff = []subcommand{
	{prog: "spctl", words: []string{}, anyFlag: []string{"--master-disable", "--global-disable", "--disable"}, what: "Gatekeeper"},
	{prog: "csrutil", words: []string{"disable"}, what: "System Integrity Protection"},
	{prog: "csrutil", words: []string{"authenticated-root", "disable"}, what: "System Integrity Protection"},
	{prog: "xattr", words: []string{}, anyFlag: []string{"com.apple.quarantine"}, test: quarantineRemoval, what: "the quarantine of downloaded files"},
	{prog: "defaults", words: []string{"write", "com.apple.launchservices", "lsquarantine"}, what: "the quarantine of downloaded files"},
	{prog: "defaults", words: []string{"write", "/library/preferences/com.apple.alf"}, what: "the firewall"},
	{prog: "defaults", words: []string{"write", "com.apple.alf"}, what: "the firewall"},
	{prog: "socketfilterfw", words: []string{}, anyFlag: []string{"--setglobalstate"}, what: "the firewall"},
	{prog: "tccutil", words: []string{"reset"}, what: "privacy permissions (TCC)"},
	{prog: "fdesetup", words: []string{"disable"}, what: "FileVault"},
	{prog: "systemsetup", words: []string{}, anyFlag: []string{"-setremotelogin", "-setremoteappleevents"}, what: "remote access"},
	{prog: "pfctl", words: []string{}, anyFlag: []string{"-d"}, what: "the packet filter"},
	{prog: "setenforce", words: []string{"0"}, what: "SELinux"},
	{prog: "ufw", words: []string{"disable"}, what: "the firewall"},
}

// persistence are commands that make something run again later, at login or on a schedule.
var persistence = []subcommand{
	{prog: "launchctl", words: []string{"load"}, what: "a launchd job"},
	{prog: "launchctl", words: []string{"bootstrap"}, what: "a launchd job"},
	{prog: "launchctl", words: []string{"enable"}, what: "a launchd job"},
	{prog: "launchctl", words: []string{"submit"}, what: "a launchd job"},
	{prog: "systemctl", words: []string{"enable"}, what: "a systemd unit"},
	{prog: "defaults", words: []string{"write", "com.apple.loginwindow", "loginhook"}, what: "a login hook"},
	{prog: "at", words: []string{}, what: "an at job"},
	{prog: "sfltool", words: []string{"add"}, what: "a login item"},
}

// backupDeletes remove backups or snapshots: what would undo a mistake.
var backupDeletes = []subcommand{
	{prog: "tmutil", words: []string{"delete"}, what: "Time Machine backups"},
	{prog: "tmutil", words: []string{"deletelocalsnapshots"}, what: "local snapshots"},
	{prog: "tmutil", words: []string{"disable"}, what: "Time Machine"},
	{prog: "tmutil", words: []string{"thinlocalsnapshots"}, what: "local snapshots"},
	{prog: "vssadmin", words: []string{"delete"}, what: "shadow copies"},
}

// installers take a package from a source they name; a URL, a git repository or another index
// runs code no reviewer has seen.
var installers = lazy.Value[map[string][]string]{Make: func() map[string][]string {
	return map[string][]string{
		"pip": {"install"}, "pip3": {"install"}, "pipx": {"install", "run"}, "uv": {"pip", "add", "tool"},
		"npm": {"install", "i", "add"}, "pnpm": {"add", "install", "i"}, "yarn": {"add"}, "bun": {"add", "install"},
		"gem": {"install"}, "cargo": {"install"}, "go": {"install", "get"},
	}
}}

// installIndexOptions name another package index.
var installIndexOptions = []string{"-i", "--index-url", "--extra-index-url", "--registry", "--source", "--git", "--find-links", "-f"}

// namesOnly are programs that look at a path's name, mode or metadata, never its content, or
// that only pass a path on as text (echo, export): handing them a key is no read of it.
var namesOnly = nameset.Of(
	"ls", "stat", "test", "[", "[[", "du", "wc", "realpath",
	"readlink", "dirname", "basename", "mkdir", "rmdir", "chmod", "chown",
	"chgrp", "chflags", "xattr", "touch", "cd", "pushd", "popd", "echo",
	"printf", "export", "declare", "typeset", "local", "readonly", "unset",
	"alias", "which", "type", "command", "whereis", "mdls", "GetFileInfo",
	"md5", "md5sum", "shasum", "sha1sum", "sha256sum", "sha512sum", "cksum",
	"b2sum", "lsof", "fuser", "df", "tree", "exa", "eza", "fd",
	"find", "file", "locate", "mdfind", "rm", "unlink", "shred", "srm",
)

// namesOnlyUnless are options with which a names-only program reads a file's content after all:
// file -f LIST prints each line of LIST, find -fprint writes one.
var namesOnlyUnless = lazy.Value[map[string][]string]{Make: func() map[string][]string {
	return map[string][]string{
		"find": {"-fprint", "-fprint0", "-fprintf", "-fls", "-files0-from"},
		"file": {"-f", "--files-from", "-m", "--magic-file"},
		"wc":   {"--files0-from"},
		"du":   {"--files0-from"},
	}
}}

// keyConsumers are the options through which a program uses a key or a configuration as its
// owner meant (ssh -i KEY, kubectl --kubeconfig FILE): the program reads it to authenticate, and
// prints none of it.
var keyConsumers = lazy.Value[map[string][]string]{Make: func() map[string][]string {
	return map[string][]string{
		"ssh": {"-i", "-F"}, "scp": {"-i", "-F"}, "sftp": {"-i", "-F"}, "ssh-keygen": {"-f"}, "ssh-copy-id": {"-i"},
		"kubectl": {"--kubeconfig"}, "helm": {"--kubeconfig"}, "k9s": {"--kubeconfig"}, "kubectx": {"--kubeconfig"},
		"docker": {"--config", "--tlscacert", "--tlscert", "--tlskey"}, "git": {"--git-dir"},
		"twine": {"--config-file"}, "npm": {"--userconfig"}, "pnpm": {"--userconfig"},
		"psql": {"--passfile"}, "mysql": {"--defaults-file", "--defaults-extra-file"},
		"curl": {"--cert", "--key", "-E", "--netrc-file", "--cacert"}, "wget": {"--certificate", "--private-key", "--ca-certificate"},
		"openvpn": {"--config"}, "age": {"-i", "--identity"}, "sops": {"--age"},
	}
}}

// keyOwners are programs whose every argument naming a key is theirs to use: ssh-add loads a
// key into the agent, ssh-keygen -lf prints its fingerprint.
var keyOwners = nameset.Of("ssh-add", "ssh-keygen")

// persistReaders read the files they are handed and write none (beyond readers): what they do to
// a start-up file is look at it.
var persistReaders = nameset.Of("diff", "cmp", "view",
	"glow", "highlight", "pygmentize", "shellcheck", "bash", "zsh", "sh")

// readers are commands whose path arguments are files they read.
var readers = nameset.Of("cat", "less", "more", "head", "tail", "bat", "base64",
	"xxd", "od", "hexdump", "strings", "grep", "egrep", "rg", "awk", "sed",
	"cp", "scp", "rsync", "tar", "zip", "gpg", "openssl", "source", ".",
	"nl", "tac", "sort", "uniq", "diff", "jq", "yq", "security", "sqlite3",
	"ln", "link", "install", "ditto")

// contentReaders write what they read from their file operands (or a transformation of it) to
// their output.
var contentReaders = nameset.Of("cat", "tac", "head", "tail", "base64", "base32",
	"xxd", "od", "hexdump", "strings", "gzip", "bzip2", "xz", "zstd", "lz4",
	"pigz", "tar", "gtar", "bsdtar", "zip", "cpio", "pax", "7z", "sort", "uniq",
	"cut", "sed", "awk", "jq", "yq", "tr", "nl", "paste", "column", "rev",
	"fold", "dd", "openssl", "gpg", "uuencode", "less", "more", "bat")

// searchers print the lines of files that match a pattern; with a credential pattern, what they
// print is the credential.
var searchers = nameset.Of("grep", "egrep", "fgrep", "rg", "ag", "ack")

// removers delete the files they name.
var removers = nameset.Of("rm", "unlink", "rmdir", "shred", "srm", "trash")

// permCommands change permissions or owners; with -R on a critical folder they break the system.
var permCommands = nameset.Of("chmod", "chown", "chgrp", "chflags", "setfacl", "chattr")

// otherSenders are the programs besides sendOptions' and rawSenders' that sendEffects knows.
var otherSenders = nameset.Of("ssh", "gh", "tar", "gtar", "bsdtar", "scp", "rsync", "sftp")

// findTakesValue are find's primaries and options that take a value (which may look like
// -delete: find -name -delete).
var findTakesValue = nameset.Of("-name", "-iname", "-path", "-ipath", "-wholename",
	"-regex", "-iregex", "-type", "-xtype", "-newer", "-user", "-group",
	"-perm", "-size", "-mtime", "-mmin", "-atime", "-amin", "-ctime",
	"-cmin", "-maxdepth", "-mindepth", "-links", "-inum", "-samefile",
	"-fstype", "-uid", "-gid", "-printf", "-fprintf", "-fprint", "-lname",
	"-ilname", "-used", "-context", "-newermt")
