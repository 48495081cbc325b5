package classifier

import (
	"testing"

	"github.com/coworkbridge/coworkbridge/claudehook"
)

// Git is judged as git reads its command line, not as a regular expression does.
func TestGitIsReadAsGitReadsIt(t *testing.T) {
	c, err := New(Policy{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		cmd      string
		decision claudehook.Decision
		rule     string
	}{
		// what runs
		{"git reset --h", claudehook.Deny, "bash.git-reset-hard"}, // the one long option --h can be
		{"git -c 'alias.wipe=reset --hard' wipe", claudehook.Deny, "bash.git-reset-hard"},
		{"git push --force --force-with-lease", claudehook.Allow, ""}, // the lease still holds
		{"git push --force-with-lease=other origin +main", claudehook.Deny, "bash.git-push-force"},
		{"git push --force-with-lease=main origin +main", claudehook.Allow, ""}, // main is leased
		{"git -c gc.pruneExpire=now gc", claudehook.Deny, "bash.git-discard-all"},
		{"git gc --p=now", claudehook.Deny, "bash.git-discard-all"},
		{"git reflog expire --expire-unreachable=now --all", claudehook.Deny, "bash.git-discard-all"},
		{"git filter-repo --force --replace-text --help", claudehook.Deny, "bash.git-discard-all"}, // --help is the value
		{"git checkout -f", claudehook.Deny, "bash.git-discard-all"},
		{"git restore --staged --worktree .", claudehook.Deny, "bash.git-discard-all"},
		{"git restore -- . --keep", claudehook.Deny, "bash.git-discard-all"}, // after --, a path
		{"git push --mirror origin", claudehook.Deny, "bash.git-discard-all"},
		{"git -c clean.requireForce=false clean", claudehook.Ask, "bash.git-clean-force"},
		{"git clean -f", claudehook.Ask, "bash.git-clean-force"},
		{"git restore --staged .", claudehook.Ask, "bash.git-discard"},
		{"git checkout -f -- src/lib.rs", claudehook.Ask, "bash.git-discard"},
		{"git stash clear", claudehook.Ask, "bash.git-discard"},
		{"git worktree remove --force ../other", claudehook.Ask, "bash.git-discard"},
		{"git checkout main a.txt b.txt", claudehook.Ask, "bash.git-discard"},
		{"git reset --merge", claudehook.Ask, "bash.git-discard"},
		{"git filter-branch -- --all", claudehook.Ask, "bash.git-discard"},
		// what does not
		{"git reset -- --hard", claudehook.Allow, ""},     // a path named --hard
		{"git reset --hard --help", claudehook.Allow, ""}, // help, nothing runs
		{"git push -- --force", claudehook.Allow, ""},
		{"git push --dry-run --force origin main", claudehook.Allow, ""},
		{"git push --dry-run --mirror origin", claudehook.Allow, ""},
		{"git clean -f --no-force", claudehook.Allow, ""},
		{"git clean -if", claudehook.Allow, ""}, // asks about each file itself
		{"git filter-repo --dry-run --force", claudehook.Allow, ""},
		{"git reflog expire --dry-run --expire=now --all", claudehook.Allow, ""},
		{"git checkout -b topic", claudehook.Allow, ""},
		{"git -c gc.pruneExpire=now gc --no-prune", claudehook.Allow, ""},
		{"git -c 'alias.status=reset --hard' status", claudehook.Allow, ""}, // git ignores an alias of a builtin
		{"git commit -m 'git reset --hard'", claudehook.Allow, ""},
	}
	for _, tt := range tests {
		v := judgeBash(t, c, tt.cmd)
		if v.Decision != tt.decision || tt.rule != "" && v.RuleID != tt.rule {
			t.Errorf("%s: %s (%s), want %s %s", tt.cmd, v.Decision, v.RuleID, tt.decision, tt.rule)
		}
	}
}
