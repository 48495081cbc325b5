package facts

import "testing"

func TestCanonPathWritesEveryHomeAsTilde(t *testing.T) {
	tests := map[string]string{
		"/Users/ada/.ssh/id_rsa": "~/.ssh/id_rsa", "/Users/ada": "~", "/home/bob/x": "~/x", "/root/.aws": "~/.aws",
		"/var/root": "~", "$HOME/.env": "~/.env", "${HOME}": "~", "~ada/.zshrc": "~/.zshrc", "~/x": "~/x",
		"/Users/": "/Users", "/rootkit/x": "/rootkit/x", "/home": "/home", "~Ada/x": "~Ada/x", "/Usersx/a": "/Usersx/a",
	}
	for in, want := range tests {
		if got := CanonPath(in, "/tmp"); got != want {
			t.Errorf("canonPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPathsAreResolvedBeforeMatching(t *testing.T) {
	for _, tc := range []struct{ in, cwd, want string }{
		{"../.ssh/id_rsa", "/Users/ada/project", "~/.ssh/id_rsa"},
		{"/root/.aws/config", "", "~/.aws/config"},
		{"/home/dev/./x/../.netrc", "", "~/.netrc"},
		{"$HOME/.kube/config", "", "~/.kube/config"},
		{"notes.md", "/sessions/s/mnt/outputs", "/sessions/s/mnt/outputs/notes.md"},
		{"/var/tmp/../../etc/passwd", "", "/etc/passwd"},
	} {
		if got := CanonPath(tc.in, tc.cwd); got != tc.want {
			t.Errorf("canonPath(%q, %q) = %q, want %q", tc.in, tc.cwd, got, tc.want)
		}
	}
}
