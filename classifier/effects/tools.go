package effects

import (
	"strings"

	"github.com/coworkbridge/coworkbridge/classifier/facts"
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
var sendOptions = map[string]map[string]dataForm{
	"curl": {
		"-d": formData, "--data": formData, "--data-ascii": formData, "--data-binary": formData,
		"--data-raw": formLiteral, "--data-urlencode": formURLEncode, "--json": formData,
		"-F": formForm, "--form": formForm, "--form-string": formLiteral,
		"-T": formFile, "--upload-file": formFile,
	},
	"wget": {"--post-data": formLiteral, "--post-file": formFile, "--body-data": formLiteral, "--body-file": formFile},
}

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
var credentialConsumers = map[string]bool{"docker": true, "podman": true, "helm": true, "oras": true, "crane": true,
	"skopeo": true, "nerdctl": true, "buildah": true, "finch": true, "cosign": true, "pbcopy": true}

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

// gitExecKeys are git configuration keys whose value git runs as a command. true: whatever the
// value (a hooks folder, a monitor); false: when the value is a command line rather than a plain
// program name (core.editor=vim is an editor, core.editor='sh -c ...' is not).
var gitExecKeys = map[string]bool{
	"core.fsmonitor": true, "core.hookspath": true, "uploadpack.packobjectshook": true,
	"core.sshcommand": false, "core.pager": false, "core.editor": false, "core.askpass": false,
	"sequence.editor": false, "diff.external": false, "gpg.program": false, "gpg.ssh.program": false,
	"credential.helper": false, "core.gitproxy": false,
}

// gitExecKeyPrefixes are key families that run commands: aliases starting with "!", filter
// drivers, diff and merge drivers.
var gitExecKeyPrefixes = []string{"alias.", "filter.", "diff.", "merge.", "pager.", "difftool.", "mergetool."}

// installers take a package from a source they name; a URL, a git repository or another index
// runs code no reviewer has seen.
var installers = map[string][]string{
	"pip": {"install"}, "pip3": {"install"}, "pipx": {"install", "run"}, "uv": {"pip", "add", "tool"},
	"npm": {"install", "i", "add"}, "pnpm": {"add", "install", "i"}, "yarn": {"add"}, "bun": {"add", "install"},
	"gem": {"install"}, "cargo": {"install"}, "go": {"install", "get"},
}

// installIndexOptions name another package index.
var installIndexOptions = []string{"-i", "--index-url", "--extra-index-url", "--registry", "--source", "--git", "--find-links", "-f"}
