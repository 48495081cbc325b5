package main

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// readmeCommand is one coworkbridge command line shown in a README's code.
type readmeCommand struct {
	file string
	line int
	env  []string // NAME=value assignments before the command
	args []string // after the program name
}

// readmeCommands finds the command lines in indented or fenced code that run coworkbridge,
// as "coworkbridge ..." or "go run ./cmd/coworkbridge ...", with $PWD standing for root.
func readmeCommands(t *testing.T, root, file string) []readmeCommand {
	t.Helper()
	f, err := os.Open(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []readmeCommand
	sc := bufio.NewScanner(f)
	fenced := false
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		if strings.HasPrefix(text, "```") {
			fenced = !fenced
			continue
		}
		if !fenced && !strings.HasPrefix(text, "    ") {
			continue
		}
		words := shellWords(strings.ReplaceAll(strings.TrimSpace(text), "$PWD", root))
		var c readmeCommand
		for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
			c.env, words = append(c.env, words[0]), words[1:]
		}
		switch {
		case len(words) > 2 && words[0] == "go" && words[1] == "run" && words[2] == "./cmd/coworkbridge":
			c.args = words[3:]
		case len(words) > 0 && words[0] == "coworkbridge":
			c.args = words[1:]
		default:
			continue
		}
		c.file, c.line = file, n
		out = append(out, c)
	}
	return out
}

// shellWords splits a command line as sh would for the simple lines READMEs show: single and
// double quotes, a comment after " #", ~ at the start of a word.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	inWord, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == ' ' || c == '\t':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		case c == '#' && !inWord:
			return words
		case c == '~' && !inWord:
			home, _ := os.UserHomeDir()
			cur.WriteString(home)
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// The command examples of README.md and deploy/README.md run as shown and succeed: an admin or
// contributor who copies one gets what the text says.
func TestREADMECommandsRun(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	var cmds []readmeCommand
	for _, f := range []string{"README.md", "CONTRIBUTING.md", filepath.Join("deploy", "README.md"), filepath.Join("deploy", "REFERENCE.md")} {
		cmds = append(cmds, readmeCommands(t, root, f)...)
	}
	if len(cmds) < 6 {
		t.Fatalf("found only %d command examples; has the README's layout changed?", len(cmds))
	}
	t.Chdir(root)
	for _, c := range cmds {
		t.Run(filepath.Base(c.file)+":"+strings.Join(c.args, " "), func(t *testing.T) {
			for _, a := range c.args {
				if strings.HasPrefix(a, "../shared/") {
					if _, err := os.Stat(a); err != nil {
						t.Skipf("%s:%d needs %s, beside the checkout: %v", c.file, c.line, a, err)
					}
				}
			}
			if len(c.args) > 0 && c.args[0] == "run" {
				runREADMEDaemon(t, c)
				return
			}
			state := t.TempDir()
			t.Setenv("COWORKBRIDGE_STATE_DIR", state)
			t.Setenv("COWORKBRIDGE_MANAGED_CONFIG", filepath.Join(state, "none.json"))
			for _, kv := range c.env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			code, out, errs := runCLI(t, "", c.args...)
			// check --settings on a planted example says so in its status, as documented.
			held := code == exitHeld && slices.Contains(c.args, "--settings")
			if code != exitOK && !held {
				t.Errorf("%s:%d: coworkbridge %s exited %d\nstdout:\n%s\nstderr:\n%s", c.file, c.line, strings.Join(c.args, " "), code, out, errs)
			}
		})
	}
}

// runREADMEDaemon starts a README's run example as a process and stops it once it guards.
func runREADMEDaemon(t *testing.T, c readmeCommand) {
	m := newMachine(t)
	m.extraEnv = c.env // after the machine's own, so they win
	p := start(t, m, c.args...)
	p.waitLog(t, "guarding Cowork sessions", nil)
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Errorf("%s:%d: the daemon exited %d", c.file, c.line, code)
	}
}
