#!/bin/sh
# Compliance check for an MDM audit (Kandji Audit and Enforce, Intune custom attribute or
# remediation, Workspace ONE sensor...). Run as root. Exit 0 when coworkbridge guards the
# console user's sessions, 1 otherwise with the reason on stdout (an audit's non-zero exit
# triggers the MDM's remediation: reinstall the package, except when every call is denied
# because managed.json is invalid: then the profile must be fixed, and the reason says so).
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
# status: 0 healthy, 1 a warning is active, 2 the daemon is not running, 3 every call is denied
# (managed.json asks for enforce but is invalid, with no good copy), 64 misuse.
if [ $code -eq 3 ]; then
  echo "every tool call is denied: fix managed.json (coworkbridge validate names every problem) and deliver the profile again; reinstalling does not help"
fi
[ $code -eq 0 ]
