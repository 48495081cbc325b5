// Package classifier is coworkbridge's policy engine: given one Claude Code PreToolUse payload it
// answers allow (no objection), ask or deny, with the rule and a reason. The same engine serves
// the daemon and the in-process `hook` subcommand.
//
// Rules live in small line-oriented files, one per target (bash, edit, read, content, mcp); the
// defaults are embedded and admins add their own. Shell commands are parsed, not pattern-matched
// as text: every simple command is reached through pipelines, substitutions, nested shells,
// wrappers and heredocs, and rules match each one normalised.
//
// The classifier knows nothing about files, VMs or Cowork sessions: it never reads the paths it
// judges.
package classifier
