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

// A Mac's volume takes a name in any case, through its firmlinks and /private's links, and with
// its accents composed or not: each is written under one name.
func TestCanonPathFoldsTheMacsOtherNamesForAFolder(t *testing.T) {
	for in, want := range map[string]string{
		"/users/ada/x":                              "~/x",
		"/USERS/ADA":                                "~",
		"/System/Volumes/Data/Users/ada/Library":    "~/Library",
		"/system/volumes/data/Library/LaunchAgents": "/Library/LaunchAgents",
		"/System/Volumes/Data":                      "/",
		"/System/Volumes/Database/x":                "/System/Volumes/Database/x",
		"/private/var/folders/x":                    "/var/folders/x",
		"/private/etc/hosts":                        "/etc/hosts",
		"/PRIVATE/TMP/x":                            "/TMP/x",
		"/private/Users/x":                          "/private/Users/x",
		"/private/var/root/.ssh":                    "~/.ssh",
		"/tmp/re\u0301sume\u0301.md":                "/tmp/r\u00e9sum\u00e9.md",
	} {
		if got := CanonPath(in, ""); got != want {
			t.Errorf("CanonPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// A process's working folder in /proc is the folder the process starts in, and its root is /:
// cleaning the name as written would lose the folder (/proc/self/cwd/.. is not /proc/self).
func TestCanonPathReadsAProcessFolderAsTheFolderItStandsFor(t *testing.T) {
	for in, want := range map[string]string{
		"/proc/self/cwd/../.ssh/notes":   "~/.ssh/notes",
		"/proc/thread-self/cwd/x":        "~/proj/x",
		"/proc/4242/cwd":                 "~/proj",
		"/proc/self/root/etc/hosts":      "/etc/hosts",
		"/proc/self/root/Users/ada/.aws": "~/.aws",
		"/proc/self/status":              "/proc/self/status",
		"/proc/self/cwdx/y":              "/proc/self/cwdx/y",
		"/proc/$$/cwd/../.ssh/notes":     "~/.ssh/notes",
		"/proc/$BASHPID/cwd/../b":        "~/b",
		"/proc/${PPID}/cwd/x":            "~/proj/x",
		"/proc/*/cwd/../x":               "~/x",
		"/proc/[0-9]*/root/etc/hosts":    "/etc/hosts",
		"/proc/sys/kernel/hostname":      "/proc/sys/kernel/hostname",
	} {
		if got := CanonPath(in, "/Users/ada/proj"); got != want {
			t.Errorf("CanonPath(%q) = %q, want %q", in, got, want)
		}
	}
	if got := CanonPath("/proc/self/cwd/a", ""); got != "a" {
		t.Errorf("with no folder known: %q, want it relative", got)
	}
}
