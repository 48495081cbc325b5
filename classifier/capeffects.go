package classifier

import (
	"strings"

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
func (f finder) capabilityEffects(cmd *Command, cwd string, an *Analysis) []Effect {
	var out []Effect
	for _, h := range capabilityHits(cmd) {
		switch h.cap {
		case CapExec, CapShell:
			for _, v := range h.values {
				out = append(out, execEffect(cmd.Name, v, cwd, an))
			}
		case CapNetShell:
			for _, v := range h.values {
				if givesShell(v) {
					out = append(out, effect(EffectRemoteShell, cmd.Name, "runs", v))
				}
			}
		case CapWrite, CapRead:
			for _, v := range h.values {
				out = append(out, f.pathEffects(cmd.Name, canonPath(v, cwd), h.cap == CapWrite)...)
			}
		case CapStdinPaths:
			for _, p := range stdinPaths(cmd) {
				out = append(out, f.pathEffects(cmd.Name, canonPath(p, cwd), false)...)
			}
		case CapImpact:
			out = append(out, effect(EffectImpact, cmd.Name, "what", h.what))
		case CapAccount:
			out = append(out, effect(EffectPersist, cmd.Name, "what", h.what))
		case CapSystemConfig:
			out = append(out, effect(EffectSystemConfig, cmd.Name, "what", h.what))
		case CapPrivilege:
			out = append(out, effect(EffectPrivilege, cmd.Name, "what", h.what))
		case CapServiceStop:
			out = append(out, serviceStop(cmd))
		case CapLibrary:
			for _, v := range h.values {
				e := effect(EffectLoadLibrary, cmd.Name, "path", v)
				if p := canonPath(v, cwd); tempPath().MatchString(p) || hiddenPath().MatchString(p) || an != nil && an.Scripts[p] != "" {
					e.Attrs = append(e.Attrs, [2]string{"planted", ""})
				}
				out = append(out, e)
			}
		case CapCollect:
			out = append(out, effect(EffectCollect, cmd.Name, "what", h.what))
		case CapRemoteAccess:
			out = append(out, effect(EffectRemoteShell, cmd.Name, "runs", "a tunnel to this machine"))
		case CapServe:
			out = append(out, effect(EffectServe, cmd.Name))
		case CapMount:
			out = append(out, effect(EffectMount, cmd.Name, "what", h.what))
		case CapSQL:
			for _, v := range h.values {
				out = append(out, sqlEffects(cmd.Name, v)...)
			}
		case CapPublish, CapShare:
			flag := map[Capability]string{CapPublish: "existing", CapShare: "new"}[h.cap]
			out = append(out, effect(EffectPublish, cmd.Name, flag, "", "what", h.what))
		}
	}
	return out
}

// execEffect is a command run through an option: a shell or an interpreter (which whoever wrote
// the value drives), or a file in a temporary or hidden folder or one the command wrote itself,
// is flagged; anything else is a program run by another.
func execEffect(by, value, cwd string, an *Analysis) Effect {
	e := effect(EffectExec, by, "runs", value)
	first, _, _ := strings.Cut(strings.TrimSpace(strings.Trim(value, `'"`)), " ")
	p := canonPath(first, cwd)
	switch {
	case givesShell(value):
		e.Attrs = append(e.Attrs, [2]string{"shell", ""})
	case throwaway(p) || an != nil && an.Scripts[p] != "":
		e.Attrs = append(e.Attrs, [2]string{"planted", ""})
	}
	return e
}

// throwaway reports a path in a temporary or hidden folder: where a dropped file goes unseen.
func throwaway(p string) bool {
	return tempPath().MatchString(p) || hiddenPath().MatchString(p) || strings.HasPrefix(p, "/dev/shm/")
}

// hiddenPath is a path through a hidden folder outside the project's own tools (.git, .venv...).
var hiddenPath = lazyregexp.New(`(^|/)\.[^/.][^/]*/`)

// pathEffects judge a path a capability reads or writes: a credential store (read or
// overwritten), a persistence location written.
func (f finder) pathEffects(by, p string, write bool) []Effect {
	switch {
	case f.secretStore(p):
		e := effect(EffectOpen, by, "path", p, "secret", "")
		if write {
			e.Attrs = append(e.Attrs, [2]string{"write", ""})
		}
		return []Effect{e}
	case write && persistLocation().MatchString(p):
		return []Effect{effect(EffectOpen, by, "path", p, "persist-location", "", "write", "")}
	}
	return nil
}

// serviceStop names the service a command stops: one that records or defends is flagged.
func serviceStop(cmd *Command) Effect {
	name := strings.Join(operands(cmd.Args), " ")
	e := effect(EffectServiceStop, cmd.Name, "service", name)
	if defenceServices().MatchString(name) {
		e.Attrs = append(e.Attrs, [2]string{"defence", ""})
	}
	return e
}
