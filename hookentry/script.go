package hookentry

import (
	"fmt"
	"strings"
	"text/template"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/internal/lazy"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/ruleid"
)

// Marker identifies our hook entries in a settings.json. Any PreToolUse hook whose command
// contains it is ours: the current one is kept, every other variant is replaced.
const Marker = "coworkbridge-hook"

// ScriptVersion changes whenever the scripts' behaviour changes, so that entries written by an
// older daemon are recognisably stale even with the same settings.
const ScriptVersion = 6

// ScriptParams are the values a hook script is generated from.
type ScriptParams struct {
	Mode            managedconfig.Mode
	DecisionTimeout time.Duration
	// MaxLineBytes sizes dd's block so that a whole envelope line goes out in one write(2).
	MaxLineBytes int64
	// HostChannel is the session's folder in the daemon's own state, outside the session: where
	// a hook running on the Mac (Cowork's host loop) hands over its event and finds its decision
	// and the lease, out of the agent's reach. A hook that cannot see it (inside the VM) uses the
	// session's bridge folder. Empty: every hook uses the bridge folder.
	HostChannel string
	// Notice is the organisation's block message, put around the script's own denies (daemon not
	// running, no decision in time) as around the daemon's.
	Notice managedconfig.Notices
}

// paramsFrom takes the script parameters from a configuration.
func paramsFrom(cfg managedconfig.Config) ScriptParams {
	return ScriptParams{Mode: cfg.Mode, DecisionTimeout: cfg.DecisionTimeout, MaxLineBytes: cfg.MaxLineBytes, Notice: cfg.Policy.Notices}
}

// The programs the script runs, by absolute path: a PATH from the session's settings must not
// choose them. These paths hold on macOS and on Linux alike (merged /usr or not).
const (
	envBin   = "/usr/bin/env"
	shBin    = "/bin/sh"
	trBin    = "/usr/bin/tr"
	odBin    = "/usr/bin/od"
	catBin   = "/bin/cat"
	dateBin  = "/bin/date"
	ddBin    = "/bin/dd"
	rmBin    = "/bin/rm"
	mkdirBin = "/bin/mkdir"
	sleepBin = "/bin/sleep"
)

// Script returns the hook command for Claude Code to run with /bin/sh -c.
//
// The command at once replaces itself, through env -i, by a shell with an environment of our
// choosing: settings can give hooks PATH, IFS, LD_PRELOAD and the like, and none of them may
// reach the script. Where env is missing an enforce hook denies.
//
// Every process the script starts costs about a millisecond, so it uses shell builtins wherever
// POSIX allows: the request id comes from the kernel's uuid file when there is one (the Linux VM)
// and from od only as the fallback (macOS), the payload is held in a variable rather than a
// second temporary file, and dd is given a block larger than any accepted line instead of
// measuring the line. It must also run unchanged under zsh in its native mode, so it never relies
// on word splitting or globbing, and avoids zsh's special names ($path, $status).
//
// Everything it reads in the session folder is checked to be a plain file first, so that a FIFO
// or a link planted there cannot hang it until Claude Code kills it (which lets the call run).
func Script(p ScriptParams) (string, error) {
	dt := int(p.DecisionTimeout / time.Second)
	if dt < 1 {
		return "", fmt.Errorf("hook script: decision timeout %v is below 1s", p.DecisionTimeout)
	}
	if p.MaxLineBytes < 1 {
		return "", fmt.Errorf("hook script: max line bytes %d must be positive", p.MaxLineBytes)
	}
	fallback := "exit 0"
	if p.Mode == managedconfig.Enforce {
		fallback = "printf '%s\\n' " + shellQuote(hookDeny("this tool call was blocked because "+envBin+" is missing on this machine."))
	}
	body, err := scriptBody(p, dt)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("# %s v%d mode=%s\n[ -x %s ] && exec %s -i PATH=/usr/bin:/bin LC_ALL=C \"CLAUDE_CONFIG_DIR=${CLAUDE_CONFIG_DIR:-$HOME/.claude}\" %s -c %s coworkbridge\n%s\n",
		Marker, ScriptVersion, p.Mode, envBin, envBin, shBin, shellQuote(body), fallback), nil
}

// scriptBody is the script the sanitised shell runs.
func scriptBody(p ScriptParams, dt int) (string, error) {
	var body *template.Template
	switch p.Mode {
	case managedconfig.Observe:
		body = observeScript.Get()
	case managedconfig.Enforce:
		body = enforceScript.Get()
	default:
		return "", fmt.Errorf("hook script: unknown mode %q", p.Mode)
	}
	var b strings.Builder
	err := body.Execute(&b, map[string]any{
		"DT":         dt,
		"MaxPolls":   fastPolls + dt*10, // the fast polls take about 0.1 s; then one every 0.1 s
		"BS":         p.MaxLineBytes + 64<<10,
		"FastPolls":  fastPolls,
		"WD":         dt + watchdogGrace,
		"Host":       shellQuote(p.HostChannel),
		"Envelope":   claudehook.EnvelopeFormat(string(p.Mode)),
		"DenyFormat": denyFormat(p.Notice),
		"Tr":         trBin, "Od": odBin, "Cat": catBin, "Date": dateBin, "Dd": ddBin,
		"Rm": rmBin, "Mkdir": mkdirBin, "Sleep": sleepBin,
	})
	return b.String(), err
}

// denyFormat is the printf format of the script's own deny, inside the script's single quotes: the
// organisation's words before coworkbridge's reason and its help page after, as the daemon's
// denies carry them.
func denyFormat(n managedconfig.Notices) string {
	before, after := n.Frame(managedconfig.NoticeFacts{Rule: ruleid.Hook, Decision: "deny"})
	return strings.ReplaceAll(claudehook.DenyFormatAround(before+"coworkbridge: ", after), "'", `'\''`)
}

// shellQuote quotes s for a POSIX shell as one word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// denyJSON is the hook output of a deny with a reason of our own.
func hookDeny(reason string) string {
	return strings.TrimSuffix(string(claudehook.Output(claudehook.Deny, "coworkbridge: "+reason, "")), "\n")
}

const fastPolls = 6

// watchdogGrace is how far past the decision timeout the enforce hook's watchdog denies, whatever
// the hook waits on then (its standard input, a write into the session's folder): well before
// Claude Code's own timeout (at least twice the decision timeout), at which the call would run.
const watchdogGrace = 2

// The shared head: silence stderr (Claude Code would show it), keep temporary files private, make
// a 32-hex request id, and choose the channel: the host folder when this hook can see it (it runs
// on the Mac), else the bridge folder in the session's .claude, found through CLAUDE_CONFIG_DIR
// (never the cwd, which may be outputs/ or the user's own folder). A hook in the VM stages its
// line in the staging folder, which the daemon makes and does not watch, so that the file's
// coming and going wakes nobody; where that folder is missing it stages beside the spool.
const scriptHead = `exec 2>/dev/null
umask 077
cb_dir="$CLAUDE_CONFIG_DIR/coworkbridge"
cb_h={{.Host}}
cb_rid=
cb_u=
[ -f /proc/sys/kernel/random/uuid ] && read -r cb_u < /proc/sys/kernel/random/uuid
if [ ${#cb_u} -eq 36 ]; then
  cb_r=${cb_u}
  for cb_i in 1 2 3 4; do cb_rid=$cb_rid${cb_r%%-*}; cb_r=${cb_r#*-}; done
  cb_rid=$cb_rid$cb_r
else
  cb_rid=$({{.Od}} -An -N16 -tx1 /dev/urandom | {{.Tr}} -d ' \n')
fi
case $cb_rid in *[!0-9a-f]*) cb_rid= ;; esac
[ ${#cb_rid} -eq 32 ] || cb_rid=
if [ -n "$cb_h" ] && [ -d "$cb_h" ] && [ ! -h "$cb_h" ]; then cb_c=$cb_h; else cb_c=$cb_dir; cb_h=; fi
cb_t="$cb_c/.ev-$cb_rid"
[ -z "$cb_h" ] && [ -d "$cb_dir/staging" ] && [ ! -h "$cb_dir/staging" ] && cb_t="$cb_dir/staging/.ev-$cb_rid"
cb_sp="$cb_dir/events.jsonl"
`

// In the host channel the event file itself is the hand-over (the daemon takes it from there);
// in the bridge folder it is appended to the spool with one write.
var observeScript = lazy.Value[*template.Template]{Make: func() *template.Template {
	return template.Must(template.New("observe").Parse(scriptHead + `[ -n "$cb_h" ] || [ -d "$cb_dir" ] || {{.Mkdir}} -p "$cb_dir"
cb_p=$({{.Tr}} -d '\r\n')
[ -n "$cb_p" ] || cb_p=null
if [ -n "$cb_rid" ] && printf '{{.Envelope}}' "$cb_rid" "$cb_p" > "$cb_t" && [ -z "$cb_h" ]; then
  if [ ! -e "$cb_sp" ] || { [ -f "$cb_sp" ] && [ ! -h "$cb_sp" ]; }; then
    {{.Dd}} if="$cb_t" bs={{.BS}} >> "$cb_sp"
  fi
  {{.Rm}} -f "$cb_t"
fi
exit 0
`))
}}

// The enforce script answers exactly once on stdout: the daemon's decision, nothing (no objection),
// or its own deny. It waits at most about the decision timeout, counted both by polls and, from
// the first slow poll, by the clock, so that neither a sleep that rejects fractions nor a slow
// machine can stretch it to Claude Code's hook timeout (at least twice the decision timeout), at
// which the call would go through. A call answered within the fast polls starts no clock at all:
// the lease is tested against the event file just written (the daemon dates the lease to the
// time it runs to), with test's -nt, which every shell the hook meets has (dash, bash, zsh,
// busybox) though POSIX leaves it out. In a host channel the daemon may have taken the event file
// already: one gone is one the daemon took, so its absence vouches as the lease would.
//
// A decision that cannot be read once found (removed, or made unreadable, between the look and
// the read) is a deny: read as an empty file, it was a no objection.
//
// The script and its watchdog answer through a claim: whichever makes the claim file first
// answers. The claim is made with printf, a regular built-in, so that a claim lost is a status,
// not the end of the shell: a redirection that fails on a special built-in such as ":" ends a
// POSIX shell, with status 2 in dash but 1 in bash, busybox and zsh as sh, and a CLI without
// onFailure "block" lets a call through a hook that exits 1. The script that finds the claim
// taken stops the watchdog and exits 2, which blocks the call in every release: the watchdog may
// have been stopped between its claim and its answer, and the claim file may be a plant (in the
// VM loop a process beside the hook can read the request id in the session). The watchdog that
// answers removes its claim once the script is dead.
var enforceScript = lazy.Value[*template.Template]{Make: func() *template.Template {
	return template.Must(template.New("enforce").Parse(scriptHead + `cb_df="$cb_c/decisions/$cb_rid.json"
cb_wd=
cb_lk="${TMPDIR:-/tmp}/.coworkbridge-$cb_rid"
cb_claim() {
  set -C
  { printf '' > "$cb_lk"; } 2>/dev/null
  cb_won=$?
  set +C
  if [ -n "$cb_wd" ]; then kill "$cb_wd" 2>/dev/null; wait "$cb_wd" 2>/dev/null; fi
  if [ $cb_won -ne 0 ] && { [ -e "$cb_lk" ] || [ -h "$cb_lk" ]; }; then {{.Rm}} -f "$cb_lk"; exit 2; fi
}
cb_deny() {
  cb_claim
  if [ -n "$cb_h" ]; then {{.Rm}} -f "$cb_lk"; else {{.Rm}} -f "$cb_t" "$cb_lk"; fi
  printf '{{.DenyFormat}}' "$1"
  exit 0
}
if [ -z "$cb_rid" ]; then {{.Cat}} > /dev/null; cb_deny "this tool call was blocked because the hook could not make a request id."; fi
( trap - TERM
  {{.Sleep}} {{.WD}} < /dev/null > /dev/null 2>&1
  set -C
  if { printf '' > "$cb_lk"; } 2>/dev/null; then
    printf '{{.DenyFormat}}' "this tool call was blocked because the hook did not finish within {{.WD}}s (its input, or the session folder, stalled)."
    kill -9 $$
    {{.Rm}} -f "$cb_lk"
  fi
) &
cb_wd=$!
[ -n "$cb_h" ] || [ -d "$cb_dir/decisions" ] || {{.Mkdir}} -p "$cb_dir/decisions"
cb_p=$({{.Tr}} -d '\r\n')
[ -n "$cb_p" ] || cb_deny "this tool call was blocked because the hook received no tool call data."
printf '{{.Envelope}}' "$cb_rid" "$cb_p" > "$cb_t" || cb_deny "this tool call was blocked because the hook could not write its temporary file."
cb_p=
if [ ! -f "$cb_c/alive" ] || [ -h "$cb_c/alive" ] || { [ ! "$cb_c/alive" -nt "$cb_t" ] && [ -e "$cb_t" ]; }; then
  [ -z "$cb_h" ] || {{.Rm}} -f "$cb_t"
  cb_deny "coworkbridge is not running on this Mac, so this tool call was blocked. It is required by your organisation; ask your IT team if this persists."
fi
if [ -z "$cb_h" ]; then
  { [ ! -e "$cb_sp" ] || { [ -f "$cb_sp" ] && [ ! -h "$cb_sp" ]; }; } || cb_deny "this tool call was blocked because the session's spool is not a plain file."
  {{.Dd}} if="$cb_t" bs={{.BS}} >> "$cb_sp" || cb_deny "this tool call was blocked because the hook could not hand it to coworkbridge."
fi
cb_end=
cb_n=0
while [ $cb_n -lt {{.MaxPolls}} ]; do
  if [ -f "$cb_df" ] && [ ! -h "$cb_df" ]; then
    cb_out=
    { IFS= read -r cb_out; :; } < "$cb_df" || cb_deny "this tool call was blocked because its decision could not be read (it was taken away or made unreadable)."
    cb_claim
    if [ -n "$cb_h" ]; then {{.Rm}} -f "$cb_df" "$cb_lk"; else {{.Rm}} -f "$cb_df" "$cb_t" "$cb_lk"; fi
    [ -n "$cb_out" ] && printf '%s\n' "$cb_out"
    exit 0
  fi
  cb_n=$((cb_n + 1))
  case $cb_n in 1) cb_s=0.002 ;; 2) cb_s=0.003 ;; 3) cb_s=0.005 ;; 4) cb_s=0.01 ;; 5) cb_s=0.02 ;; 6) cb_s=0.05 ;; *) cb_s=0.1 ;; esac
  {{.Sleep}} $cb_s || {{.Sleep}} 1
  if [ $cb_n -gt {{.FastPolls}} ]; then
    cb_now=$({{.Date}} +%s)
    case $cb_now in ''|*[!0-9]*) cb_deny "this tool call was blocked because the hook could not read the clock." ;; esac
    [ -n "$cb_end" ] || cb_end=$((cb_now + {{.DT}}))
    [ "$cb_now" -ge "$cb_end" ] && break
  fi
done
cb_deny "no decision from coworkbridge within {{.DT}}s, so this tool call was blocked to be safe."
`))
}}
