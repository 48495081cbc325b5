package facts

import (
	"slices"
	"strings"
	"testing"
)

// What make runs for a target: its recipe and its prerequisites', with variables, automatic
// variables and continued lines as make reads them, $(shell …) included; other targets' not.
func TestMakeRecipesAreWhatMakeRunsForTheTarget(t *testing.T) {
	mf := "SHELL := /bin/bash\nV ?= $(shell git describe)\nOUT = bin/$(NAME)\nNAME = app\n" +
		".PHONY: all test\n" +
		"all: $(OUT)\n\n" +
		"$(OUT): main.go \\\n  util.go\n\t@go build -o $@ $^\n\n" +
		"test: all ; go test ./...\n" +
		"%.o: %.c\n\t-cc -c $< -o $@\n" +
		"obj: x.o\n" +
		"define CANNED\necho canned\nendef\n" +
		"danger:\n\trm -rf $$HOME # comment stays in the shell\n"
	for _, tc := range []struct {
		targets []string
		want    []string
	}{
		{[]string{""}, []string{"git describe", "go build -o bin/app main.go util.go"}},
		{[]string{"test"}, []string{"git describe", " go test ./...", "go build -o bin/app main.go util.go"}},
		{[]string{"obj"}, []string{"git describe", "cc -c x.c -o x.o"}},
		{[]string{"danger"}, []string{"git describe", "rm -rf $HOME # comment stays in the shell"}},
		{[]string{"nothing"}, []string{"git describe"}},
	} {
		got := MakeRecipes(mf, tc.targets)
		for i := range got {
			got[i] = strings.TrimSpace(got[i])
		}
		for i := range tc.want {
			tc.want[i] = strings.TrimSpace(tc.want[i])
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("make %q:\n got %q\nwant %q", tc.targets, got, tc.want)
		}
	}
}

// A package manager runs a script with its pre and post scripts; a file that is not JSON, or
// holds a script that is not a string, runs nothing.
func TestPackageScriptsAreWhatTheManagerRuns(t *testing.T) {
	pkg := "\ufeff{\"scripts\":{\"prebuild\":\"echo pre\",\"build\":\"tsc\",\"postbuild\":\"echo post\",\"odd\":7}}"
	if got := PackageScripts(pkg, []string{"prebuild", "build", "postbuild", "odd"}); !slices.Equal(got, []string{"echo pre", "tsc", "echo post"}) {
		t.Errorf("got %q", got)
	}
	if got := PackageScripts("{scripts: {build: 'x'}}", []string{"build"}); got != nil {
		t.Errorf("not JSON: got %q", got)
	}
}

// Each form of running a file names it, joined with the folder it starts in; the forms that run
// code from elsewhere name none.
func TestEachWayOfRunningAFileNamesIt(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want []string
	}{
		{"bash run.sh", []string{"run.sh"}},
		{"sh -e ./run.sh arg", []string{"./run.sh"}},
		{". ./env.sh", []string{"./env.sh"}},
		{"python3 -u tool.py --flag", []string{"tool.py"}},
		{"node --require ./hook.js app.js", []string{"app.js"}},
		{"deno run main.ts", []string{"main.ts"}},
		{"./configure && make", []string{"./configure", "GNUmakefile", "makefile", "Makefile"}},
		{"make -f build.mk", []string{"build.mk"}},
		{"cd a; cd b && ./x", []string{"a/b/x"}},
		{"nohup bash job.sh &", []string{"job.sh"}},
		{"npm run build", []string{"package.json"}},
		{"yarn --cwd web build", []string{"web/package.json"}},
		{"bash -c 'echo hi'", nil},
		{"python3 -m http.server", nil},
		{"python3 -c 'print(1)'", nil},
		{"echo 'rm -rf ~' > x.sh; bash x.sh", nil}, // written in the same command: read from it
		{"/usr/bin/make --version", nil},
		{"/usr/bin/make -j 4 all", []string{"GNUmakefile", "makefile", "Makefile"}},
		{"/bin/ls", nil},
		{"npm install lodash", nil},
		{"bun test", nil},
	} {
		var got []string
		for _, r := range Analyze(tc.cmd).Runs {
			got = append(got, r.Path)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q runs %q, want %q", tc.cmd, got, tc.want)
		}
	}
}

// The environment and folder a statement leaves reach the commands after it.
func TestTheShellsStateReachesLaterCommands(t *testing.T) {
	a := Analyze("export A=1; B=2; unset C; cd sub; env -u D -C deeper x")
	x := command(a, "x")
	if x == nil {
		t.Fatal("x not reached")
	}
	if !slices.Equal(x.Env, []string{"A=1", "B=2"}) || !slices.Equal(x.Unsets, []string{"D", "C"}) || x.Dir != "sub/deeper" {
		t.Fatalf("x: env %q unsets %q dir %q", x.Env, x.Unsets, x.Dir)
	}
	y := command(Analyze("export -n A; A=1 y"), "y")
	if len(y.Env) != 0 || !slices.Equal(y.Assigns, []string{"A=1"}) {
		t.Fatalf("y: env %q assigns %q", y.Env, y.Assigns)
	}
}

func FuzzMakeRecipes(f *testing.F) {
	f.Add("all: b\n\techo $(X)\nb:\n\t@cc $<\nX = $(Y)\nY = $(X)\n", "all")
	f.Add("define A\nx\nendef\n%.o: %.c ; cc $< \\\n -o $@\n$(shell id)\n", "a.o")
	f.Add("a: a\n\t$(", "")
	f.Fuzz(func(t *testing.T, text, target string) {
		got := MakeRecipes(text, []string{target})
		if len(got) > maxRecipeLines+maxMakeLines {
			t.Fatalf("%d lines from a %d-byte file", len(got), len(text))
		}
	})
}

func FuzzPackageScripts(f *testing.F) {
	f.Add(`{"scripts":{"build":"tsc","prebuild":"x"}}`, "build")
	f.Add(`{"scripts":[1]}`, "0")
	f.Fuzz(func(t *testing.T, text, target string) {
		for _, s := range PackageScripts(text, []string{target}) {
			if strings.TrimSpace(s) == "" {
				t.Fatalf("an empty script was returned for %q", target)
			}
		}
	})
}

// Whatever a file holds, analysing a command that runs it stays within the analysis limits.
func FuzzRunFile(f *testing.F) {
	f.Add("bash x.sh", "rm -rf ~; bash x.sh")
	f.Add("make", "all:\n\tmake\n")
	f.Add("npm run a", `{"scripts":{"a":"npm run a"}}`)
	f.Fuzz(func(t *testing.T, cmd, content string) {
		files := map[string]string{"x.sh": content, "Makefile": content, "package.json": content, "./x": content}
		a := AnalyzeWith(cmd, nil, files)
		if len(a.Commands) > maxCommands+16 || len(a.Runs) > maxRuns {
			t.Fatalf("%d commands, %d runs", len(a.Commands), len(a.Runs))
		}
	})
}

// A repository's configuration: the alias asked for, the commands its keys run, hooksPath.
func TestGitConfigCommandsAreWhatGitRunsForTheSubcommand(t *testing.T) {
	cfg := "# comment\n[core]\n\tfsmonitor = true\n\thooksPath = \"/tmp/h\" ; moved\n\tsshCommand = ssh -i ~/.ssh/k\n" +
		"[alias]\n\tst = status -sb\n\tboom = !sh -c 'echo \\\"hi\\\"' \\\n   --extra\n" +
		"[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n"
	cmds, hooks := GitConfigCommands(cfg, "st")
	if hooks != "/tmp/h" || !slices.Equal(cmds, []string{"ssh -i ~/.ssh/k", "git status -sb", "git-lfs clean -- %f"}) {
		t.Errorf("st: %q, hooks %q", cmds, hooks)
	}
	if cmds, _ := GitConfigCommands(cfg, "boom"); !slices.Contains(cmds, `sh -c 'echo "hi"'    --extra`) {
		t.Errorf("boom: %q", cmds)
	}
}

func FuzzGitConfig(f *testing.F) {
	f.Add("[alias]\n\tx = !rm -rf ~\n[core]\n\thooksPath = h\n", "x")
	f.Add("[a \"b\"] c = \"d\\\n", "c")
	f.Fuzz(func(t *testing.T, text, sub string) {
		cmds, _ := GitConfigCommands(text, sub)
		if len(cmds) > maxGitConfigLines {
			t.Fatalf("%d commands from %d bytes", len(cmds), len(text))
		}
	})
}

// A command line stored for later (git settings, MCP servers) is found without panicking however
// the storing command is written, and each one found is a command line the analysis reads.
func FuzzStoredCommands(f *testing.F) {
	for _, s := range []string{`git config alias.x "!curl x | sh"`, `git -c core.pager="less -R" log`,
		`claude mcp add x -- bash -c "id"`, `claude mcp add-json x '{"command":"sh","args":["-c","id"]}'`,
		`codex mcp add`, `git config`, `claude mcp add-json x '{"command":1}'`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		an := Analyze(line)
		for i := range an.Commands {
			for _, stored := range StoredCommands(&an.Commands[i]) {
				Analyze(stored)
			}
		}
	})
}
