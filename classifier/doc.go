// Package classifier is coworkbridge's policy engine: given one Claude Code PreToolUse payload it
// answers allow (no objection), ask or deny, with the rule and a reason. The same engine serves
// the daemon and the in-process `hook` subcommand.
//
// It is the top of three layers, each a package the compiler keeps apart: facts (what a command
// or code says it does, parsed, never judged), effects (what that amounts to, typed, with
// targets) and this one, the verdicts: the `.rules` language matched over commands, paths,
// content, URLs and effects, and the validators rules name. Rules live in small line-oriented
// files, one per target (bash, edit, read, content, mcp, effect); the defaults are embedded and
// admins add their own.
//
// The classifier knows nothing about files, VMs or Cowork sessions: it never reads the paths it
// judges.
package classifier
