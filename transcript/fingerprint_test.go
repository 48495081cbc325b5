package transcript

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSameComparesInputsByValueNotBySpelling(t *testing.T) {
	tests := []struct {
		name        string
		judged, ran string
		want        bool
	}{
		{"identical", `{"command":"ls"}`, `{"command":"ls"}`, true},
		{"order and spacing", `{"a":1,"command":"ls"}`, `{ "command" : "ls", "a" : 1 }`, true},
		{"escapes", `{"command":"a<b"}`, `{"command":"a\u003cb"}`, true},
		{"a default the CLI fills in", `{"file_path":"/x","old_string":"a","new_string":"b","replace_all":false}`, `{"file_path":"/x","old_string":"a","new_string":"b"}`, true},
		{"another command", `{"command":"ls"}`, `{"command":"rm -rf ~"}`, false},
		{"another path", `{"file_path":"/tmp/x","content":"k"}`, `{"file_path":"/Users/a/.ssh/authorized_keys","content":"k"}`, false},
		{"a member the judged input lacks", `{"command":"ls"}`, `{"command":"ls","run_in_background":true}`, false},
		{"a judged member that is not a default", `{"command":"ls","run_in_background":true}`, `{"command":"ls"}`, false},
		{"numbers by value", `{"n":1.0}`, `{"n":1.0}`, true},
		{"not objects", `"x"`, `"x"`, true},
		{"not objects, different", `"x"`, `"y"`, false},
		// Claude Code makes a relative file_path absolute before its hooks see it; its
		// transcript keeps it as the model wrote it.
		{"a relative path the hook saw made absolute", `{"file_path":"/sessions/s/mnt/outputs/notes/a.md","content":"x"}`, `{"file_path":"notes/a.md","content":"x"}`, true},
		{"the same, ./ written", `{"file_path":"/sessions/s/mnt/outputs/a.md","content":"x"}`, `{"file_path":"./a.md","content":"x"}`, true},
		{"an absolute path the transcript shows, a relative one judged", `{"notebook_path":"a.ipynb"}`, `{"notebook_path":"/w/a.ipynb"}`, true},
		{"a relative path naming another file", `{"file_path":"/sessions/s/mnt/outputs/a.md","content":"x"}`, `{"file_path":"b.md","content":"x"}`, false},
		{"a relative path climbing out, no folder known", `{"file_path":"/sessions/s/mnt/a.md","content":"x"}`, `{"file_path":"../a.md","content":"x"}`, false},
		{"another content, the path alike", `{"file_path":"/w/a.md","content":"x"}`, `{"file_path":"a.md","content":"y"}`, false},
		{"a path in another member is compared as written", `{"command":"/w/a.sh"}`, `{"command":"a.sh"}`, false},
	}
	for _, tt := range tests {
		if got := Same(FingerprintOf(json.RawMessage(tt.judged)), FingerprintOf(json.RawMessage(tt.ran))); got != tt.want {
			t.Errorf("%s: Same = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// With the call's folder known (the payload's cwd, the transcript line's), a relative path is
// the file Claude Code makes of it, ../ included.
func TestARelativePathIsTheFileTheCallsFolderMakesOfIt(t *testing.T) {
	judged := FingerprintIn(json.RawMessage(`{"file_path":"/sessions/s/mnt/a.md","content":"x"}`), "/sessions/s/mnt/outputs")
	for ran, want := range map[string]bool{
		`{"file_path":"../a.md","content":"x"}`:                  true,
		`{"file_path":"../outputs/../a.md","content":"x"}`:       true,
		`{"file_path":"a.md","content":"x"}`:                     false,
		`{"file_path":"/sessions/s/mnt/a.md","content":"x"}`:     true,
		`{"file_path":"/sessions/s/mnt/a.md","content":"other"}`: false,
	} {
		if got := Same(judged, FingerprintIn(json.RawMessage(ran), "/sessions/s/mnt/outputs")); got != want {
			t.Errorf("%s: Same = %v, want %v", ran, got, want)
		}
	}
}

func TestPreviewKeepsSmallInputsWholeAndBoundsLargeOnes(t *testing.T) {
	small := json.RawMessage(`{"command":"ls"}`)
	if got := Preview(small); string(got) != string(small) {
		t.Errorf("small input became %s", got)
	}
	big := json.RawMessage(`{"content":"` + strings.Repeat("é", 100000) + `"}`)
	got := Preview(big)
	if len(got) > 2*maxPreview || !json.Valid(got) || !strings.Contains(string(got), `"truncated":true`) {
		t.Errorf("large input preview (%d bytes): %.200s", len(got), got)
	}
}

func FuzzFingerprint(f *testing.F) {
	f.Add([]byte(`{"command":"ls"}`), []byte(`{"command":"ls","x":false}`))
	f.Add([]byte(`[1,2]`), []byte(`nul`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		fa := FingerprintOf(a)
		if !Same(fa, fa) {
			t.Fatalf("an input is not the same as itself: %q", a)
		}
		if len(fa) > maxFingerprintKeys {
			t.Fatalf("fingerprint of %d members", len(fa))
		}
		Same(fa, FingerprintOf(b))
		if p := Preview(a); len(p) > 2*maxPreview && len(a) > maxPreview {
			t.Fatalf("preview of %d bytes", len(p))
		}
	})
}
