#!/bin/sh
# Compliance check for an MDM audit (Kandji Audit and Enforce, Intune custom attribute or
# remediation, Workspace ONE sensor...). Run as root. Exit 0 when coworkbridge guards the
# console user's sessions, 1 otherwise with the reason on stdout (an audit's non-zero exit
# triggers the MDM's remediation: reinstall the package).
BIN=${COWORKBRIDGE_BIN:-"/Library/Application Support/CoworkBridge/bin/coworkbridge"}

[ -x "$BIN" ] || { echo "coworkbridge is not installed at $BIN"; exit 1; }
user=
if [ "$(uname -s)" = Darwin ]; then
  user=$(/usr/bin/stat -f %Su /dev/console 2>/dev/null)
  case $user in ''|root|_mbsetupuser) echo "nobody is logged in: nothing to check"; exit 0 ;; esac
fi
if [ -n "$user" ]; then
  out=$("$BIN" status --user "$user" 2>&1)
else
  out=$("$BIN" status 2>&1)
fi
code=$?
echo "$out"
# status: 0 healthy, 1 a warning is active, 2 the daemon is not running, 64 misuse.
[ $code -eq 0 ]
