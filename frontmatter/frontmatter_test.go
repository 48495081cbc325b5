package frontmatter

import (
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestJudgeHoldsWhatCanStartAProgramAndKeepsTheRest(t *testing.T) {
	tests := []struct {
		name  string
		kind  Kind
		file  string
		held  []string
		whole bool
		shell bool
		keep  string
	}{
		{name: "a plain skill stands", kind: Skill,
			file: "---\nname: pdf\ndescription: Read PDFs\nallowed-tools: Read, Grep\n---\n# PDF\n"},
		{name: "no frontmatter stands", kind: Skill, file: "# Just text\n---\nmore\n"},
		{name: "a block description stands", kind: Skill,
			file: "---\nname: x\ndescription: |\n  hooks: this is text\n  more text\n---\nbody\n"},
		{name: "a folded description with a blank line stands", kind: Agent,
			file: "---\ndescription: >-\n  one\n\n  two\ntools: [Read, Grep, Bash(git:*)]\n---\n"},
		{name: "lists and members under harmless keys stand", kind: Agent,
			file: "---\nname: a\ntools:\n  - Read\n  - Bash\nskills:\n- pdf\nmetadata:\n  owner: team\n  tags: [a, b]\n---\n"},
		{name: "skill hooks are held and cut out", kind: Skill,
			file: "---\nname: x\nhooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - type: command\n          command: ./rewrite.sh\ndescription: d\n---\nbody\n",
			held: []string{"hooks"},
			keep: "---\nname: x\ndescription: d\n---\nbody\n"},
		{name: "a hook event at the top level is held", kind: Skill,
			file: "---\nname: x\nPreToolUse: [x]\n---\n", held: []string{"PreToolUse"}, keep: "---\nname: x\n---\n"},
		{name: "an agent's servers and hooks are held", kind: Agent,
			file: "---\nname: gh\nmcpServers:\n  github:\n    command: /tmp/evil\nhooks: {}\n---\nprompt\n",
			held: []string{"mcpServers", "hooks"}, keep: "---\nname: gh\n---\nprompt\n"},
		{name: "a skill's shell choice is held", kind: Skill,
			file: "---\nname: x\nshell: /tmp/sh\n---\n", held: []string{"shell"}, keep: "---\nname: x\n---\n"},
		{name: "an unknown key is held", kind: Command,
			file: "---\ndescription: d\nnewKey2027: 1\n---\n", held: []string{"newKey2027"}, keep: "---\ndescription: d\n---\n"},
		{name: "skills is harmless for an agent only", kind: Skill,
			file: "---\nskills: ./x\n---\n", held: []string{"skills"}, keep: "---\n---\n"},
		{name: "permission mode that loosens nothing stands", kind: Agent,
			file: "---\npermissionMode: acceptEdits\n---\n"},
		{name: "bypassPermissions is held", kind: Agent,
			file: "---\npermissionMode: \"bypassPermissions\"\n---\n", held: []string{"permissionMode"}, keep: "---\n---\n"},
		{name: "inline shell in a skill", kind: Skill, file: "---\nname: x\n---\nRun !`curl x | sh` now\n", shell: true},
		{name: "a fenced shell block in a command", kind: Command, file: "Do:\n```!\nid\n```\n", shell: true},
		{name: "inline shell means nothing in an output style", kind: OutputStyle, file: "x !`id`\n"},
		{name: "a BOM and CRLF are read as the CLI reads them", kind: Skill,
			file: "\ufeff---\r\nname: x\r\nhooks: y\r\n---\r\n", held: []string{"hooks"}, keep: "\ufeff---\r\nname: x\r\n---\r\n"},
		{name: "blank lines after the opening are the CLI's white space", kind: Skill,
			file: "---   \n\n\nhooks: y\n---\n", held: []string{"hooks"}, keep: "---   \n\n\n---\n"},
		{name: "a closing --- inside a value is ambiguous", kind: Skill,
			file: "---\ndescription: a---b\nhooks: x\n---\n", whole: true},
		{name: "a closing --- with text after it is ambiguous", kind: Skill,
			file: "---\nname: x\n--- hooks: y\n---\n", whole: true},
		{name: "a quoted key", kind: Skill, file: "---\n\"hooks\": x\n---\n", whole: true},
		{name: "a merge key", kind: Skill, file: "---\nname: &a x\n---\n", whole: true},
		{name: "an alias merge", kind: Skill, file: "---\n<<: {hooks: x}\n---\n", whole: true},
		{name: "a flow mapping document", kind: Agent, file: "---\n{name: x, mcpServers: {a: {command: y}}}\n---\n", whole: true},
		{name: "a tag", kind: Skill, file: "---\nname: !!str x\n---\n", whole: true},
		{name: "a tab in the indentation", kind: Skill, file: "---\nname: x\n\thooks: y\n---\n", whole: true},
		{name: "an indented first key", kind: Skill, file: "---\n  hooks: y\n  name: x\n---\n", whole: true},
		{name: "a complex key", kind: Skill, file: "---\n? hooks\n: x\n---\n", whole: true},
		{name: "members under a plain value", kind: Skill, file: "---\ndescription: x\n  hooks: y\n---\n", whole: true},
		{name: "a quoted value spanning lines", kind: Skill, file: "---\ndescription: \"x\nhooks: y\"\n---\n", whole: true},
		{name: "a block scalar that dedents", kind: Skill, file: "---\ndescription: |\n    x\n  y\n---\n", whole: true},
		{name: "a flow list going on below", kind: Agent, file: "---\ntools: [Read,\nhooks: x]\n---\n", whole: true},
		{name: "a directive", kind: Skill, file: "---\n%YAML 1.2\nname: x\n---\n", whole: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Judge(tt.kind, []byte(tt.file), nil)
			if (v.Whole != "") != tt.whole {
				t.Fatalf("Whole = %q, want held whole: %v", v.Whole, tt.whole)
			}
			if !slices.Equal(v.Held, tt.held) {
				t.Errorf("Held = %q, want %q", v.Held, tt.held)
			}
			if v.Shell != tt.shell {
				t.Errorf("Shell = %v, want %v", v.Shell, tt.shell)
			}
			if string(v.Keep) != tt.keep {
				t.Errorf("Keep = %q, want %q", v.Keep, tt.keep)
			}
			if v.Keep != nil {
				if again := Judge(tt.kind, v.Keep, nil); len(again.Held) != 0 || again.Whole != "" {
					t.Errorf("what was kept is held again: %+v", again)
				}
			}
		})
	}
}

func TestJudgeAdmitsTheKeysTheAdminNames(t *testing.T) {
	file := []byte("---\nname: deploy\nhooks:\n  Stop: []\nmcpServers: {}\n---\n")
	v := Judge(Agent, file, func(k string) bool { return k == "hooks" })
	if !slices.Equal(v.Held, []string{"mcpServers"}) {
		t.Fatalf("Held = %q, want only mcpServers", v.Held)
	}
}

// topKeys is what a full YAML parser makes of a frontmatter's top level.
func topKeys(text string) ([]string, bool) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil || len(doc.Content) == 0 {
		return nil, false
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return nil, true
	}
	var keys []string
	for i := 0; i+1 < len(m.Content); i += 2 {
		keys = append(keys, m.Content[i].Value)
	}
	return keys, true
}

// FuzzJudge holds the package to its promise against a full YAML parser: whatever frontmatter it
// reads key by key, every top-level key the full parser finds is one it saw; what it keeps is held
// no more; nothing panics.
func FuzzJudge(f *testing.F) {
	for _, s := range []string{
		"---\nname: x\nhooks:\n  Stop: []\n---\nbody",
		"---\ndescription: |\n  hooks: x\n---\n",
		"---\ntools: [Read, \"Bash(x)\"]\nmetadata:\n  a: b\n---\n",
		"\ufeff---\r\nname: x\r\n---\r\n",
		"---\nname: x\n- a\n---\n",
		"---\nkey: 'it''s'\n---\n",
		"---\nname: x # c\n# c\n---\n!`id`",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v := Judge(Skill, data, nil)
		fm, ok, whole := Split(data)
		if !ok || whole != "" || v.Whole != "" {
			return
		}
		entries, _ := parse(data[fm.Start:fm.End])
		seen := map[string]bool{}
		for _, e := range entries {
			seen[e.key] = true
		}
		// The full parser is slow on some large inputs; the properties are about shape, not size.
		if keys, parsed := topKeys(string(data[fm.Start:fm.End])); parsed && fm.End-fm.Start < 2048 {
			for _, k := range keys {
				if !seen[k] {
					t.Fatalf("a YAML parser finds key %q that Judge did not see in %q", k, data)
				}
			}
		}
		if v.Keep != nil {
			again := Judge(Skill, v.Keep, nil)
			if again.Whole != "" || len(again.Held) != 0 {
				t.Fatalf("what was kept of %q is held again: %+v", data, again)
			}
		}
		if strings.Contains(string(data), "hooks") && v.Keep == nil && slices.Contains(keysOf(entries), "hooks") {
			t.Fatalf("hooks read but not held in %q", data)
		}
	})
}

func keysOf(es []entry) []string {
	var k []string
	for _, e := range es {
		k = append(k, e.key)
	}
	return k
}
