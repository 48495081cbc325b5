// Package hookentry is what coworkbridge writes into, and judges in, a session's Claude Code
// settings: its PreToolUse hook entry and the hook scripts that entry runs, the merge of that
// entry into whatever else a settings.json holds, the allow-list's hold on the rest (settings
// keys, env, hooks, MCP servers), and the CLI's settings schema. Every function works on bytes.
//
// It reads and writes no file and watches nothing: the injector keeps the entry in place in
// every live session, and the host hook judges settings with it, without linking the injector's
// loop into the per-call process.
package hookentry
