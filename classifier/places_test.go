package classifier

import (
	"context"
	"regexp"
	"testing"

	"github.com/coworkbridge/coworkbridge/claudehook"
)

// A session's agent works in its own folder, and in no other session's: on the Mac (the host
// loop) its file tools reach every session, coworkbridge's files and the Claude app's.
func TestASessionReachesItsOwnFolderAndNothingTheMapProtects(t *testing.T) {
	c := newTestClassifier(t, Policy{Places: testPlaces})
	own := testSessions + "/o/o/local_a"
	other := testSessions + "/o/o/local_b"
	glob := func(path, pattern string) claudehook.Payload {
		return payload("Glob", map[string]any{"path": path, "pattern": pattern})
	}
	grepIn := func(path string) claudehook.Payload {
		return payload("Grep", map[string]any{"path": path, "pattern": "token"})
	}
	tests := []struct {
		name string
		call claudehook.Payload
		want string // the rule, "" for none
	}{
		{"its own transcript", read(own + "/.claude/projects/p/t.jsonl"), ""},
		{"its own outputs", write(own+"/outputs/report.md", "x"), ""},
		{"another session's transcript", read(other + "/.claude/projects/p/t.jsonl"), "read.other-session"},
		{"another session's memory", write(other+"/.claude/projects/p/memory/MEMORY.md", "x"), "path.other-session"},
		{"another session, spelt in another case", read(testSessions + "/O/O/LOCAL_B/outputs/x"), "read.other-session"},
		{"another session's metadata", read(testSessions + "/o/o/local_b.json"), "read.other-session"},
		{"a search of the app's folder", grepIn("/Users/ada/Library/Application Support/Claude"), "read.other-session"},
		{"a search of the home folder", grepIn("/Users/ada"), "read.guard-files"},
		{"a search of the home folder by name", glob("/Users/ada", "**/*.md"), ""},
		{"a search of the app's folder by name", glob("/Users/ada/Library/Application Support/Claude", "**/*.jsonl"), ""},
		{"a search by name with find", bashIn(`find ~ -iname "*invoice*" -type f 2>/dev/null | sort | head -20`, "/Users/ada/src/app"), ""},
		{"a search by name that reads what it finds", bashIn(`find ~ -name "*.jsonl" -exec cat {} +`, "/Users/ada/src/app"), "read.guard-files"},
		{"a search by name handed to xargs", bashIn(`find ~ -name "*.jsonl" | xargs grep rid`, "/Users/ada/src/app"), "read.guard-files"},
		{"a search by name read in a loop", bashIn(`find ~ -name "*.jsonl" | while read f; do cat "$f"; done`, "/Users/ada/src/app"), "read.guard-files"},
		{"a search by name in a substitution", bashIn(`cat $(find ~ -name "decisions.jsonl")`, "/Users/ada/src/app"), "read.guard-files"},
		{"a search by name of another session's folder itself", glob(other, "**/*"), "read.other-session"},
		{"a search of a project in the home folder", glob("/Users/ada/src/app", "**/*.md"), ""},
		{"the decision log", read("/Users/ada/Library/Logs/CoworkBridge/decisions.jsonl"), "read.guard-files"},
		{"a healthy health.json", write("/Users/ada/Library/Application Support/CoworkBridge/health.json", "{}"), "path.guard-files"},
		{"its own host channel", write("/Users/ada/Library/Application Support/CoworkBridge/channel/local_a/events.jsonl", "{}"), "path.guard-files"},
		{"the program", write("/usr/local/bin/coworkbridge", "x"), "path.guard-files"},
		{"the app's configuration, read", read("/Users/ada/Library/Application Support/Claude/claude_desktop_config.json"), ""},
		{"the managed settings, written", write("/Library/Application Support/ClaudeCode/managed-settings.d/x.json", "{}"), "path.claude-config"},
		{"an MCP file tool", payload("mcp__filesystem__write_file", map[string]any{"path": other + "/outputs/x.md", "content": "x"}), "read.other-session"},
		// Code reads from the folder it runs in, as a shell does: a relative literal that climbs out.
		{"python's glob of the sessions beside", bashIn(`python3 -c "import glob; print([open(p).read() for p in glob.glob('../../local_*/outputs/*')])"`, own+"/outputs"), "read.other-session"},
		{"node's read of a session beside", bashIn(`node -e "console.log(require('fs').readFileSync('../../local_b/outputs/a','utf8'))"`, own+"/outputs"), "read.other-session"},
		{"python's read after a cd", bashIn(`cd ..; python3 -c "print(open('../local_b/outputs/a').read())"`, own+"/outputs"), "read.other-session"},
		{"python's climb to the keys", bashIn(`python3 -c "print(open('../../../../../../../../.ssh/id_rsa').read())"`, own+"/outputs"), "read.secrets"},
		{"python's read of its own data", bashIn(`python3 -c "import json; print(json.load(open('data/x.json')))"`, own+"/outputs"), ""},
		{"python writing its own report", bashIn(`python3 -c "open('./report.md','w').write('# r')"`, own+"/outputs"), ""},
		{"python naming a media type and a URL", bashIn(`python3 -c "import requests; print(requests.get('https://example.com/a/b', headers={'Accept': 'text/html'}).text)"`, own+"/outputs"), ""},
	}
	for _, tt := range tests {
		v := c.EvaluateFrom(context.Background(), tt.call, own)
		if v.RuleID != tt.want && !(tt.want == "" && v.Decision == claudehook.Allow) {
			t.Errorf("%s: %s %s (%s), want %q", tt.name, v.Decision, v.RuleID, v.Matched, tt.want)
		}
	}
}

// A call from no session (a CLI the user runs in a terminal) reaches no session's folder.
func TestACallFromNoSessionReachesNoSessionsFolder(t *testing.T) {
	c := newTestClassifier(t, Policy{Places: testPlaces})
	v := c.Evaluate(context.Background(), read(testSessions+"/o/o/local_a/outputs/x.md"))
	if v.RuleID != "read.other-session" {
		t.Errorf("got %s %s, want read.other-session", v.Decision, v.RuleID)
	}
}

// The map judges what a path is, not how it is spelt: every other name macOS gives a protected
// place, every search started above one, every pattern that can match one, and every working
// folder a command moves to before it names one, is refused; their look-alikes pass.
func TestEverySpellingOfAProtectedPlaceIsRefusedAndItsLookAlikesPass(t *testing.T) {
	c := newTestClassifier(t, Policy{Places: testPlaces})
	own := testSessions + "/o/o/local_a"
	other := testSessions + "/o/o/local_b"
	const log = "/Users/ada/Library/Logs/CoworkBridge/decisions.jsonl"
	grep := func(path string) claudehook.Payload {
		return payload("Grep", map[string]any{"path": path, "pattern": "rid"})
	}
	sh := func(cmd string) claudehook.Payload { return bashIn(cmd, "/Users/ada/src/app") }
	tests := []struct {
		name string
		call claudehook.Payload
		want string // the rule, "" for none
	}{
		{"the log in lower case", read("/users/ada/library/logs/coworkbridge/decisions.jsonl"), "read.guard-files"},
		{"the log in upper case", read("/USERS/ADA/LIBRARY/LOGS/COWORKBRIDGE/DECISIONS.JSONL"), "read.guard-files"},
		{"the log through the data volume", read("/System/Volumes/Data" + log), "read.guard-files"},
		{"the log through the data volume, any case", read("/system/volumes/data/Users/ada/Library/Logs/CoworkBridge/decisions.jsonl"), "read.guard-files"},
		{"a file by volume and inode", read("/.vol/16777220/1234567"), "read.guard-files"},
		{"the log through $HOME", sh("cat $HOME/Library/Logs/CoworkBridge/decisions.jsonl"), "read.guard-files"},
		{"the log through ${HOME}", sh("cat ${HOME}/Library/Logs/CoworkBridge/decisions.jsonl"), "read.guard-files"},
		{"the log through ~ada", sh("cat ~ada/Library/Logs/CoworkBridge/decisions.jsonl"), "read.guard-files"},
		{"the log through a glob", sh("cat ~/Lib*/Logs/Cow*/decisions.jsonl"), "read.guard-files"},
		{"the log through a bracket glob", sh("cat ~/[L]ibrary/Logs/CoworkBridge/*"), "read.guard-files"},
		{"the log after cd", sh("cd ~/Library/Logs/CoworkBridge && cat decisions.jsonl"), "read.guard-files"},
		{"the log after cd .. twice", bashIn("cd .. && cd .. && cat Library/Logs/CoworkBridge/decisions.jsonl", "/Users/ada/src/app"), "read.guard-files"},
		{"the log cut after cd", sh("cd ~/Library/Logs/CoworkBridge && sed -i '$d' decisions.jsonl"), "read.guard-files"},
		{"the log written after cd", sh("cd ~/Library/Logs/CoworkBridge; echo '{}' >> decisions.jsonl"), "path.guard-files"},
		{"another session's instructions written after pushd", sh("pushd '" + other + "/outputs' && printf x > CLAUDE.md"), "path.other-session"},
		{"another session after cd", sh("cd '" + other + "' && cat outputs/CLAUDE.md"), "read.other-session"},
		{"Grep at the home", grep("/Users/ada"), "read.guard-files"},
		{"Grep at ~/Library", grep("~/Library"), "read.guard-files"},
		{"Grep at ~/Library/Logs", grep("/Users/ada/Library/Logs"), "read.guard-files"},
		{"Grep at Application Support", grep("/Users/ada/Library/Application Support"), "read.guard-files"},
		{"Grep with no path, started in the home", payloadIn("Grep", map[string]any{"pattern": "rid"}, "/Users/ada"), "read.guard-files"},
		{"find at the home, handed to grep", sh("find ~ -name '*.jsonl' -print0 | xargs -0 grep -l rid"), "read.guard-files"},
		{"find at the home, by name only", sh("find ~ -name '*.jsonl'"), ""},
		{"find -exec at ~/Library", sh("find ~/Library -name '*.jsonl' -exec cat {} +"), "read.guard-files"},
		{"grep -r at ~/Library", sh("grep -r rid ~/Library"), "read.guard-files"},
		{"rg at the home", sh("rg secret ~"), "read.guard-files"},
		{"tar -C the home", sh("tar -czf /tmp/x.tgz -C ~ Library"), "read.guard-files"},
		{"rsync of ~/Library", sh("rsync -a ~/Library/ /tmp/copy/"), "read.guard-files"},
		{"cp -r of the sessions root", sh("cp -r '" + testSessions + "' /tmp/s"), "read.other-session"},
		{"zip -r of the home", sh("zip -r /tmp/h.zip ~"), "read.guard-files"},
		{"grep -r after cd ~", sh("cd && grep -r rid ."), "read.guard-files"},

		{"another project's memory", payloadIn("Write", map[string]any{"file_path": "/Users/ada/.claude/projects/-Users-ada-bank/memory/MEMORY.md", "content": "x"}, "/Users/ada/src/app"), "path.claude-config"},
		{"the CLI's program", write("/Users/ada/.claude/local/claude", "#!/bin/sh"), "path.claude-config"},
		{"its own project's memory", payloadIn("Write", map[string]any{"file_path": "/Users/ada/.claude/projects/-Users-ada-src-app/memory/MEMORY.md", "content": "x"}, "/Users/ada/src/app/pkg"), ""},
		{"a project folder named Library", read("/Users/ada/src/Library/notes.md"), ""},
		{"a file named users.txt", read("/Users/ada/src/app/users.txt"), ""},
		{"a search inside outputs", grep(own + "/outputs"), ""},
		{"a search of its own session", grep(own), ""},
		{"grep -r in the project", sh("grep -rn TODO ."), ""},
		{"find in the project", sh("find . -name '*.go'"), ""},
		{"a glob in the project", sh("cat src/*.go"), ""},
		{"cd into the project", sh("cd src && cat main.go"), ""},
		{"grep without -r at the home", sh("grep rid ~/notes.txt"), ""},
		{"cp -r into the home", sh("cp -r build ~/Desktop/build"), ""},
		{"ls of the home", sh("ls ~"), ""},
		{"/private/tmp", read("/private/tmp/build.log"), ""},
	}
	for _, tt := range tests {
		v := c.EvaluateFrom(context.Background(), tt.call, own)
		if v.RuleID != tt.want && !(tt.want == "" && v.Decision == claudehook.Allow) {
			t.Errorf("%s: %s %s (%s), want %q", tt.name, v.Decision, v.RuleID, v.Matched, tt.want)
		}
	}
}

func payloadIn(tool string, input map[string]any, cwd string) claudehook.Payload {
	p := payload(tool, input)
	p.Cwd = cwd
	return p
}

func bashIn(cmd, cwd string) claudehook.Payload {
	return payloadIn("Bash", map[string]any{"command": cmd}, cwd)
}

// projectRoots' folders of mounts and outputs read as the expressions they replaced.
func TestProjectRootsReadMountsAndOutputsAsTheirExpressions(t *testing.T) {
	mounts, outputs := regexp.MustCompile(`^/sessions/[^/]+/mnt`), regexp.MustCompile(`/local_[^/]+/outputs$`)
	for _, cwd := range []string{
		"/sessions/x/mnt", "/sessions/x/mnt/work", "/sessions/x/mntfoo", "/sessions//mnt", "/sessions/x", "/sessions/a/b/mnt",
		"sessions/x/mnt", "/home/sessions/x/mnt", "/Users/a/local_1/outputs", "/local_1/outputs", "local_1/outputs",
		"/Users/a/local_/outputs", "/Users/a/local_x/outputs/", "/Users/a/xlocal_1/outputs", "/a/local_1/b/outputs", "/outputs", "",
	} {
		if got, want := sessionMounts(cwd), mounts.FindString(cwd); got != want {
			t.Errorf("sessionMounts(%q) = %q, want %q", cwd, got, want)
		}
		if got, want := isHostOutputs(cwd), outputs.MatchString(cwd); got != want {
			t.Errorf("isHostOutputs(%q) = %v, want %v", cwd, got, want)
		}
	}
}
