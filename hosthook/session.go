package hosthook

import (
	"path/filepath"

	"github.com/coworkbridge/coworkbridge/hookentry"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/session"
)

// maxSettings bounds how much of a session's settings.json is read.
const maxSettings = 4 << 20

// guardedBySessionHook reports whether a call whose CLAUDE_CONFIG_DIR is configDir comes from a
// Cowork session whose own hook reports to the daemon, so that it is not recorded twice.
// CLAUDE_CONFIG_DIR is the session's to set (settings env), so it must name the .claude folder of
// a session folder under a configured sessions root, reached from the root through real folders
// only, whose settings carry exactly the entry the injector writes there now: a look-alike
// carrying our marker does not make the host hook stand aside.
func guardedBySessionHook(configDir string, cfg managedconfig.Config, channelRoot string) bool {
	p, ok := sessionOfConfigDir(configDir, cfg.SessionsRoots)
	if !ok {
		return false
	}
	s, err := session.OpenUnder(p.Root, p.Dir)
	if err != nil {
		return false // a link or nothing on the way: not Cowork's tree
	}
	defer s.Close()
	data, err := s.ReadFile(session.SettingsFile, maxSettings)
	if err != nil {
		return false
	}
	e, err := hookentry.NewEntry(cfg, filepath.Join(session.ChannelDir(channelRoot, p.ID()), filepath.FromSlash(session.BridgeDir)))
	return err == nil && hookentry.HookCommand(data) == e.Command
}

// StandsAside reports whether a host hook leaves the call whose CLAUDE_CONFIG_DIR is configDir
// to the session's own hook: without lockdown, for a Cowork session whose settings carry exactly
// the entry the injector writes now (see guardedBySessionHook).
func StandsAside(configDir string, cfg managedconfig.Config, channelRoot string) bool {
	return !cfg.Lockdown && guardedBySessionHook(configDir, cfg, channelRoot)
}
