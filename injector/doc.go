// Package injector keeps coworkbridge's PreToolUse hook entry (see hookentry) current in the
// settings.json of every live Cowork session, and holds what the allow-list does not pass in the
// session's other configuration: project settings, MCP state, skills, agents, commands, plugins.
//
// It finds sessions as they appear (a file watcher plus a periodic rescan), merges our entry into
// their settings without disturbing anything else, repairs it when it is removed or switched off,
// and reports each session's state through a Recorder.
//
// It does not read the spool or write decisions (see collector and decisions), does not judge
// tool calls (see classifier), and does not itself know the entry's or the scripts' contents.
package injector
