package hosthook

import (
	"path/filepath"

	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/session"
)

// ownSession is the folder of the Cowork session a call comes from: the session whose .claude
// folder CLAUDE_CONFIG_DIR names (Cowork sets it when it starts the CLI), or "" for a CLI run
// outside every session.
func ownSession(configDir string, roots []string) string {
	p, ok := sessionOfConfigDir(configDir, roots)
	if !ok {
		return ""
	}
	return p.Dir
}

// sessionOfConfigDir is the session folder whose .claude folder configDir names, under one of
// roots; ok is false for any other folder.
func sessionOfConfigDir(configDir string, roots []string) (session.Place, bool) {
	if configDir == "" || !filepath.IsAbs(configDir) || filepath.Base(filepath.Clean(configDir)) != session.ClaudeDir {
		return session.Place{}, false
	}
	p, ok := session.Locate(roots, filepath.Dir(filepath.Clean(configDir)))
	return p, ok && p.IsSession()
}

// ownSessionOf is ownSession for the configuration in force.
func ownSessionOf(env managedconfig.Env, cfg managedconfig.Config) string {
	return ownSession(getenv(env, "CLAUDE_CONFIG_DIR"), cfg.SessionsRoots)
}
