package injector

import (
	"fmt"
	"strings"
	"text/template"
	"time"

	"github.com/coworkbridge/coworkbridge/managedconfig"
)

// Marker identifies our hook entries in a settings.json. Any PreToolUse hook whose command
// contains it is ours: the current one is kept, every other variant is replaced.
const Marker = "coworkbridge-hook"

// ScriptVersion changes whenever the scripts' behaviour changes, so that entries written by an
// older daemon are recognisably stale even with the same settings.
const ScriptVersion = 1

// ScriptParams are the values a hook script is generated from.
type ScriptParams struct {
	Mode            managedconfig.Mode
	DecisionTimeout time.Duration
	// MaxLineBytes sizes dd's block so that a whole envelope line goes out in one write(2).
	MaxLineBytes int64
}

// ParamsFrom takes the script parameters from a configuration.
func ParamsFrom(cfg managedconfig.Config) ScriptParams {
	return ScriptParams{Mode: cfg.Mode, DecisionTimeout: cfg.DecisionTimeout, MaxLineBytes: cfg.MaxLineBytes}
}

// Script returns the hook command for Claude Code to run with /bin/sh -c.
//
// Every process the script starts costs about a millisecond, so it uses shell builtins wherever
// POSIX allows: the request id comes from the kernel's uuid file when there is one (the Linux VM)
// and from od only as the fallback (macOS), the temporary file sits beside the spool instead of
// coming from mktemp, and dd is given a block larger than any accepted line instead of measuring
// the line. It must also run unchanged under zsh in its native mode, so it never relies on word
// splitting or globbing, and avoids zsh's special names ($path, $status).
func Script(p ScriptParams) (string, error) {
	dt := int(p.DecisionTimeout / time.Second)
	if dt < 1 {
		return "", fmt.Errorf("hook script: decision timeout %v is below 1s", p.DecisionTimeout)
	}
	if p.MaxLineBytes < 1 {
		return "", fmt.Errorf("hook script: max line bytes %d must be positive", p.MaxLineBytes)
	}
	var tmpl *template.Template
	switch p.Mode {
	case managedconfig.Observe:
		tmpl = observeScript
	case managedconfig.Enforce:
		tmpl = enforceScript
	default:
		return "", fmt.Errorf("hook script: unknown mode %q", p.Mode)
	}
	var b strings.Builder
	err := tmpl.Execute(&b, map[string]any{
		"Marker":  Marker,
		"Mode":    p.Mode,
		"Version": ScriptVersion,
		"DT":      dt,
		// The fast polls take about 0.1 s; then one poll every 0.1 s until the timeout.
		"MaxPolls":  fastPolls + dt*10,
		"BS":        p.MaxLineBytes + 64<<10,
		"FastPolls": fastPolls,
	})
	return b.String(), err
}

const fastPolls = 6

// The shared head: silence stderr (Claude Code would show it), keep temporary files private,
// find our folder through CLAUDE_CONFIG_DIR (never the cwd, which may be outputs/ or the user's own
// folder), and make a 32-hex request id.
const scriptHead = `# {{.Marker}} v{{.Version}} mode={{.Mode}}
exec 2>/dev/null
umask 077
cb_dir="${CLAUDE_CONFIG_DIR:-$HOME/.claude}/coworkbridge"
cb_rid=
cb_u=
read -r cb_u < /proc/sys/kernel/random/uuid
if [ ${#cb_u} -eq 36 ]; then
  cb_r=${cb_u}
  for cb_i in 1 2 3 4; do cb_rid=$cb_rid${cb_r%%-*}; cb_r=${cb_r#*-}; done
  cb_rid=$cb_rid$cb_r
else
  cb_rid=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
fi
case $cb_rid in *[!0-9a-f]*) cb_rid= ;; esac
[ ${#cb_rid} -eq 32 ] || cb_rid=
cb_t="$cb_dir/.ev-$cb_rid"
`

var observeScript = template.Must(template.New("observe").Parse(scriptHead + `[ -d "$cb_dir" ] || mkdir -p "$cb_dir"
if [ -n "$cb_rid" ] && tr -d '\r\n' > "$cb_t.p"; then
  { printf '{"v":1,"rid":"%s","mode":"observe","event":' "$cb_rid" && if [ -s "$cb_t.p" ]; then cat "$cb_t.p"; else printf null; fi && printf '}\n'; } > "$cb_t" &&
    dd if="$cb_t" bs={{.BS}} >> "$cb_dir/events.jsonl"
else
  cat > /dev/null
fi
rm -f "$cb_t" "$cb_t.p"
exit 0
`))

// The enforce script answers exactly once on stdout: the daemon's decision, nothing (no objection),
// or its own deny. It waits at most the decision timeout, counted both by polls and by the clock,
// so that neither a sleep that rejects fractions nor a slow machine can stretch it to Claude
// Code's hook timeout, at which the call would go through.
var enforceScript = template.Must(template.New("enforce").Parse(scriptHead + `cb_df="$cb_dir/decisions/$cb_rid.json"
cb_deny() {
  rm -f "$cb_t" "$cb_t.p"
  printf '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"coworkbridge: %s"}}\n' "$1"
  exit 0
}
cb_now=$(date +%s)
case $cb_now in ''|*[!0-9]*) cat > /dev/null; cb_deny "this tool call was blocked because the hook could not read the clock." ;; esac
cb_alive=
read -r cb_alive < "$cb_dir/alive"
case $cb_alive in ''|*[!0-9]*) cb_alive=0 ;; esac
if [ "$cb_alive" -le "$cb_now" ]; then
  cat > /dev/null
  cb_deny "coworkbridge is not running on this Mac, so this tool call was blocked. It is required by your organisation; ask your IT team if this persists."
fi
if [ -z "$cb_rid" ]; then cat > /dev/null; cb_deny "this tool call was blocked because the hook could not make a request id."; fi
[ -d "$cb_dir/decisions" ] || mkdir -p "$cb_dir/decisions"
tr -d '\r\n' > "$cb_t.p" || { cat > /dev/null; cb_deny "this tool call was blocked because the hook could not write its temporary file."; }
[ -s "$cb_t.p" ] || cb_deny "this tool call was blocked because the hook received no tool call data."
{ printf '{"v":1,"rid":"%s","mode":"enforce","event":' "$cb_rid" && cat "$cb_t.p" && printf '}\n'; } > "$cb_t" || cb_deny "this tool call was blocked because the hook could not write its temporary file."
dd if="$cb_t" bs={{.BS}} >> "$cb_dir/events.jsonl" || cb_deny "this tool call was blocked because the hook could not hand it to coworkbridge."
cb_end=$((cb_now + {{.DT}}))
cb_n=0
while [ $cb_n -lt {{.MaxPolls}} ]; do
  if [ -f "$cb_df" ]; then
    cb_out=
    IFS= read -r cb_out < "$cb_df"
    rm -f "$cb_t" "$cb_t.p" "$cb_df"
    [ -n "$cb_out" ] && printf '%s\n' "$cb_out"
    exit 0
  fi
  cb_n=$((cb_n + 1))
  case $cb_n in 1) cb_s=0.002 ;; 2) cb_s=0.003 ;; 3) cb_s=0.005 ;; 4) cb_s=0.01 ;; 5) cb_s=0.02 ;; 6) cb_s=0.05 ;; *) cb_s=0.1 ;; esac
  sleep $cb_s || sleep 1
  if [ $cb_n -gt {{.FastPolls}} ]; then
    cb_now=$(date +%s)
    [ "$cb_now" -ge "$cb_end" ] && break
  fi
done
cb_deny "no decision from coworkbridge within {{.DT}}s, so this tool call was blocked to be safe."
`))
