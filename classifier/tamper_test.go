package classifier

import (
	"context"
	"testing"

	"github.com/coworkbridge/coworkbridge/claudehook"
)

// Every way found of writing the session's settings or the guard's folder, and of stopping the
// hook, is refused. Each case is an attack from the bridge-integrity review.
func TestGuardTamperingIsRefusedWhateverTheSpelling(t *testing.T) {
	c := newTestClassifier(t, Policy{})
	attacks := []claudehook.Payload{
		write("/sessions/x/mnt/.Claude/Settings.local.json", `{"disableAllHooks":true}`),
		write("/sessions/x/mnt/outputs/.claude/settings.local.json", `{}`),
		write("/sessions/x/mnt/.claude/SETTINGS.JSON", `{}`),
		read("/sessions/x/mnt/.claude/coworkbridge/events.jsonl"),
		bashCall(`cd ../.claude && echo '{"disableAllHooks":true}' > settings.json`),
		bashCall(`cd /sessions/x/mnt/.claude; printf '{}' > settings.local.json`),
		bashCall(`cp /tmp/evil.json ../.claude/settings.json`),
		bashCall(`mv evil.json ../.Claude/settings.json`),
		bashCall(`tee ../.claude/settings.json < evil.json`),
		bashCall(`sed -i 's/coworkbridge-hook/x/' ../.claude/settings.json`),
		bashCall(`ln -s ../.claude link && echo '{}' > link/settings.json`),
		bashCall(`mv ../.claude ../.claude-old`),
		bashCall(`rm -rf ../.claude`),
		bashCall(`f=sett; g=ings; echo '{}' > ../.claude/$f$g.json`),
		bashCall(`python3 -c "import json; json.dump({'disableAllHooks': True}, open('../.claude/settings.json','w'))"`),
		bashCall(`python3 -c "import os; open(os.path.join('..', '.claude', 'settings.local.json'), 'w').write('{}')"`),
		bashCall(`node -e "require('fs').writeFileSync('../.claude/settings.json', '{}')"`),
		bashCall(`perl -e 'open(F, ">", "../.claude/settings.json"); print F "{}"'`),
		bashCall(`ruby -e 'File.write("../.claude/settings.json", "{}")'`),
		bashCall(`echo '{"disableAllHooks": true}' > /tmp/x && cp /tmp/x ~/.claude/settings.json`),
		bashCall(`mkfifo ../.claude/coworkbridge/alive`),
		bashCall(`tar xf cfg.tar -C ../.claude`),
		bashCall(`tar -x -f cfg.tgz --directory=sub/.claude`),
		bashCall(`unzip -o cfg.zip -d .claude/`),
		bashCall(`7z x cfg.7z -o../.claude`),
		bashCall(`git clone https://x.example/cfg ../.claude`),
		bashCall(`python3 -c "open('../.claude/set' + 'tings.local.json', 'w').write('{}')"`),
		bashCall(`pkill -f coworkbridge-hook`),
		bashCall(`pkill -f userhook`),
		bashCall(`pkill -x coworkbridge-use`),
		bashCall(`killall coworkbridge-userhook`),
		bashCall(`pkill -f -- --per-user`),
		bashCall(`pkill -f 'hook --system'`),
		bashCall(`pkill -f 'run --worker'`),
		bashCall(`pkill -f 'bridge run'`),
		bashCall(`killall sh`),
		bashCall(`kill -9 $(pgrep -f coworkbridge)`),
		bashCall(`pgrep -f hook | xargs kill`),
		bashCall(`for p in /proc/[0-9]*/cmdline; do grep -l coworkbridge $p; done`),
	}
	for _, a := range attacks {
		if v := c.Evaluate(context.Background(), a); v.Decision != claudehook.Deny {
			t.Errorf("%s %s: %s (%s), want a deny", a.ToolName, a.ToolInput, v.Decision, v.RuleID)
		}
	}
}

func TestOrdinaryWorkNearTheClaudeFolderIsNotTamper(t *testing.T) {
	c := newTestClassifier(t, Policy{})
	for _, p := range []claudehook.Payload{
		bashCall("ls -la"),
		bashCall("cat settings.json"),
		write("/sessions/x/mnt/outputs/app/settings.json", `{"theme":"dark"}`),
		bashCall("kill 1234"),
		bashCall("npm run build"),
		bashCall("tar xzf vendor.tgz -C build"),
		bashCall("tar czf backup.tgz -C ../.claude projects"), // packing reads it
		bashCall("unzip -o site.zip -d dist"),
		bashCall("git clone https://github.com/x/y.git y"),
	} {
		if v := c.Evaluate(context.Background(), p); v.Decision == claudehook.Deny {
			t.Errorf("%s %s: denied by %s", p.ToolName, p.ToolInput, v.RuleID)
		}
	}
}
