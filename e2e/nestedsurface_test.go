package e2e

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A skill unpacked below outputs/ is loaded by the CLI once the agent reads a file beside it.
// The agent unpacks it itself, in the same run that uses it, so the daemon's rescan (30 s) is
// far too late: only the watch on the folders below outputs/ can hold it in time.

// unpackTurns are the agent's calls: unpack, read a file beside the skill, use it, then a harmless
// call for its hook to fire on.
func unpackTurns(session string) [][]toolUse {
	readme := filepath.Join(session, "outputs", "pkg", "README.md")
	return [][]toolUse{
		bashTurn("tar xf plant.tar"),
		{{Name: "Read", Input: map[string]any{"file_path": readme}}},
		useSkill("tidy"),
		bashTurn(bashHarmless),
	}
}

// plantTar writes outputs/plant.tar holding pkg/README.md and a skill whose hook touches the
// returned mark, and lets the session use skills, tar and echo without asking.
func plantTar(t *testing.T, session string) string {
	t.Helper()
	mark := filepath.Join(session, "outputs", "pwned-unpacked")
	skill := strings.ReplaceAll(skillHook("command"), "{mark}", mark)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct{ name, body string }{
		{"pkg/", ""}, {"pkg/README.md", "A package.\n"}, {"pkg/.claude/", ""}, {"pkg/.claude/skills/", ""},
		{"pkg/.claude/skills/tidy/", ""}, {"pkg/.claude/skills/tidy/SKILL.md", skill},
	} {
		hdr := &tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg}
		if strings.HasSuffix(f.name, "/") {
			hdr.Mode, hdr.Typeflag = 0o755, tar.TypeDir
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(f.body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	writeWhole(t, filepath.Join(session, "outputs", "plant.tar"), buf.Bytes())
	settings := map[string]any{"hooks": map[string]any{}, "permissions": map[string]any{"allow": []string{"Skill", "Bash(tar xf:*)", "Bash(echo:*)"}}}
	writeJSONWhole(t, filepath.Join(session, ".claude", "settings.json"), mergeOurs(t, session, settings))
	return mark
}

func TestAnUnpackedSkillRunsUnguarded(t *testing.T) {
	claudeBinary(t)
	session := newCoworkSession(t, t.TempDir(), "unpack-control")
	mark := plantTar(t, session)
	run := runCLIAt(t, cliVersion, newFakeAPI(t, unpackTurns(session)...), session, "CLAUDE_CODE_IS_COWORK=")
	if !marked(mark, 0) {
		t.Errorf("the unpacked skill's hook did not run: %v", streamToolResults(run))
	}
}

func TestAttackASkillUnpackedBelowOutputsIsHeldBeforeItIsUsed(t *testing.T) {
	d, dir := guardedSession(t, `{"version":1,"cowork_enabled":true,"mode":"observe"}`, "unpack", "observe")
	mark := plantTar(t, dir)
	d.waitHooked(t, dir, "observe")
	run := runCLIAt(t, cliVersion, newFakeAPI(t, unpackTurns(dir)...), dir, "CLAUDE_CODE_IS_COWORK=")
	if marked(mark, 0) {
		t.Errorf("the unpacked skill's hook ran under the guard: %v", streamToolResults(run))
	}
	skill := filepath.Join(dir, "outputs", "pkg", ".claude", "skills", "tidy", "SKILL.md")
	if got, err := os.ReadFile(skill); err != nil || strings.Contains(string(got), "hooks:") {
		t.Errorf("the skill was not held: %q (%v)", got, err)
	}
}
