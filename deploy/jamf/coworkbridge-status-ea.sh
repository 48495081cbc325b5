#!/bin/sh
# Jamf Pro extension attribute (data type: String): whether coworkbridge guards this Mac, from
# `coworkbridge status --json` for the user at the console. Jamf runs it as root.
#
# Result, one of:
#   healthy                  the daemon runs and every live session is guarded
#   warning: CODE[,CODE...]  the daemon runs; the stable warning codes active (see the README)
#   not running              the daemon is not running for the console user
#   no user                  nobody is logged in (the login window)
#   not installed            the binary is missing
# A Smart Group on "Result is not healthy" finds the Macs to look at.
BIN=${COWORKBRIDGE_BIN:-"/Library/Application Support/CoworkBridge/bin/coworkbridge"}

result() { echo "<result>$1</result>"; exit 0; }

[ -x "$BIN" ] || result "not installed"
user=
if [ "$(uname -s)" = Darwin ]; then
  user=$(/usr/bin/stat -f %Su /dev/console 2>/dev/null)
  case $user in ''|root|_mbsetupuser) result "no user" ;; esac
fi
if [ -n "$user" ]; then
  json=$("$BIN" status --json --user "$user" 2>/dev/null)
else
  json=$("$BIN" status --json 2>/dev/null)
fi
code=$?
case $code in
  0) result "healthy" ;;
  2) result "not running" ;;
  3) result "blocking: every call denied, managed.json invalid" ;;
  1)
    codes=$(printf '%s\n' "$json" | grep -o '"code": *"[a-z_]*"' | sed 's/.*"\([a-z_]*\)"$/\1/' | sort -u | paste -sd, -)
    [ -n "$codes" ] || codes=health_stale
    result "warning: $codes" ;;
  *) result "error: coworkbridge status exited $code" ;;
esac
