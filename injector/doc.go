// Package injector keeps coworkbridge's PreToolUse hook entry current in the settings.json of
// every live Cowork session, and generates the hook scripts that entry runs.
//
// The hook scripts are the VM side of the contract: they append each tool call to the session's
// spool and, in enforce mode, wait for the daemon's decision file. The injector finds sessions as
// they appear (a file watcher plus a periodic rescan), merges our entry into their settings without
// disturbing anything else, repairs it when it is removed or switched off, and reports each
// session's state through a Recorder.
//
// It does not read the spool or write decisions (see collector and decisions), and it does not
// judge tool calls (see classifier).
package injector
