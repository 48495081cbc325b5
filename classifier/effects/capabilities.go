package effects

import (
	"strings"

	"github.com/coworkbridge/coworkbridge/classifier/facts"

	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
)

// defenceServices are services that record or defend: stopping one is switching a protection
// off, whatever the program that stops it.
var defenceServices = lazyregexp.New(`(?i)(syslog|rsyslog|journald|auditd|audit|osquery|falcon|crowdstrike|sentinel|santa|xprotect|` +
	`firewall|alf|pf\b|ufw|firewalld|apparmor|selinux|clamav|clamd|defender|mdatp|wdav|jamf|mdm|wazuh|ossec|velociraptor|elastic|` +
	`sysmon|endpoint|esensor|nessus|lulu|littlesnitch|cron|sshd|coworkbridge)`)

// capabilityEffects are the effects of the capabilities a command uses. Commands an option or an
// address runs are analysed as shell where the walker reaches them (see nested); here they are
// an exec effect, whose runs= names what runs.
func (f Finder) capabilityEffects(cmd *facts.Command, cwd string, an *facts.Analysis) []Effect {
	var out []Effect
	for _, h := range facts.CapabilityHits(cmd) {
		switch h.Cap {
		case facts.CapExec, facts.CapShell:
			for _, v := range h.Values {
				out = append(out, execEffect(cmd.Name, v, cwd, an))
			}
		case facts.CapNetShell:
			for _, v := range h.Values {
				if givesShell(v) {
					out = append(out, New(EffectRemoteShell, cmd.Name, "runs", v))
				}
			}
		case facts.CapWrite, facts.CapRead:
			for _, v := range h.Values {
				out = append(out, f.pathEffects(cmd.Name, facts.CanonPath(v, cwd), h.Cap == facts.CapWrite)...)
			}
		case facts.CapStdinPaths:
			for _, p := range facts.StdinPaths(cmd) {
				out = append(out, f.pathEffects(cmd.Name, facts.CanonPath(p, cwd), false)...)
			}
		case facts.CapImpact:
			out = append(out, New(EffectImpact, cmd.Name, "what", h.What))
		case facts.CapAccount:
			out = append(out, New(EffectPersist, cmd.Name, "what", h.What))
		case facts.CapSystemConfig:
			out = append(out, New(EffectSystemConfig, cmd.Name, "what", h.What))
		case facts.CapPrivilege:
			out = append(out, New(EffectPrivilege, cmd.Name, "what", h.What))
		case facts.CapServiceStop:
			out = append(out, serviceStop(cmd))
		case facts.CapLibrary:
			for _, v := range h.Values {
				e := New(EffectLoadLibrary, cmd.Name, "path", v)
				if p := facts.CanonPath(v, cwd); tempPath.MatchString(p) || hiddenPath.MatchString(p) || an != nil && an.Scripts[p] != "" {
					e.Attrs = append(e.Attrs, [2]string{"planted", ""})
				}
				out = append(out, e)
			}
		case facts.CapCollect:
			out = append(out, New(EffectCollect, cmd.Name, "what", h.What))
		case facts.CapRemoteAccess:
			out = append(out, New(EffectRemoteShell, cmd.Name, "runs", "a tunnel to this machine"))
		case facts.CapServe:
			out = append(out, New(EffectServe, cmd.Name))
		case facts.CapMount:
			out = append(out, New(EffectMount, cmd.Name, "what", h.What))
		case facts.CapSQL:
			for _, v := range h.Values {
				out = append(out, SQLEffects(cmd.Name, v)...)
			}
		case facts.CapPublish, facts.CapShare:
			flag := map[facts.Capability]string{facts.CapPublish: "existing", facts.CapShare: "new"}[h.Cap]
			out = append(out, New(EffectPublish, cmd.Name, flag, "", "what", h.What))
		}
	}
	return out
}

// execEffect is a command run through an option: a shell or an interpreter (which whoever wrote
// the value drives), or a file in a temporary or hidden folder or one the command wrote itself,
// is flagged; anything else is a program run by another.
func execEffect(by, value, cwd string, an *facts.Analysis) Effect {
	e := New(EffectExec, by, "runs", value)
	first, _, _ := strings.Cut(strings.TrimSpace(strings.Trim(value, `'"`)), " ")
	// A name with no slash is looked up on PATH, not in the folder the command runs in: echo run
	// from a session in a temporary folder is not a file planted there.
	p := ""
	if strings.Contains(first, "/") {
		p = facts.CanonPath(first, cwd)
	}
	switch {
	case givesShell(value):
		e.Attrs = append(e.Attrs, [2]string{"shell", ""})
	case p != "" && (Throwaway(p) || an != nil && an.Scripts[p] != ""):
		e.Attrs = append(e.Attrs, [2]string{"planted", ""})
	}
	return e
}

// Throwaway reports a path in a temporary or hidden folder: where a dropped file goes unseen.
func Throwaway(p string) bool {
	return tempPath.MatchString(p) || hiddenPath.MatchString(p) || strings.HasPrefix(p, "/dev/shm/")
}

// hiddenPath is a path through a hidden folder outside the project's own tools (.git, .venv...).
var hiddenPath = lazyregexp.New(`(^|/)\.[^/.][^/]*/`)

// pathEffects judge a path a capability reads or writes: a credential store (read or
// overwritten), a persistence location written.
func (f Finder) pathEffects(by, p string, write bool) []Effect {
	switch {
	case f.secretStore(p):
		e := New(EffectOpen, by, "path", p, "secret", "")
		if write {
			e.Attrs = append(e.Attrs, [2]string{"write", ""})
		}
		return []Effect{e}
	case write && persistLocation.MatchString(p):
		return []Effect{New(EffectOpen, by, "path", p, "persist-location", "", "write", "")}
	}
	return nil
}

// serviceStop names the service a command stops: one that records or defends is flagged.
func serviceStop(cmd *facts.Command) Effect {
	name := strings.Join(facts.Operands(cmd.Args), " ")
	e := New(EffectServiceStop, cmd.Name, "service", name)
	if defenceServices.MatchString(name) {
		e.Attrs = append(e.Attrs, [2]string{"defence", ""})
	}
	return e
}
