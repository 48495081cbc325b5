package managedconfig

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func exampleProfile(t testing.TB) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "deploy", "profile", "coworkbridge.mobileconfig"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// lineOf is the line of the first line of data holding s.
func lineOf(t *testing.T, data []byte, s string) int {
	t.Helper()
	for i, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	t.Fatalf("%q not in the profile", s)
	return 0
}

func TestReadMobileconfigFindsOurPayloadAsManagedJSONAndWhereItsKeysAre(t *testing.T) {
	data := exampleProfile(t)
	mc, err := ReadMobileconfig(data)
	if err != nil {
		t.Fatal(err)
	}
	if mc.Signed || len(mc.Payloads) != 1 || len(mc.Others) != 1 || mc.Others[0] != "com.apple.servicemanagement" {
		t.Fatalf("profile read as %+v", mc)
	}
	p := mc.Payloads[0]
	if p.Name() != `payload 1 of 2 "coworkbridge settings" (com.example.coworkbridge.settings)` {
		t.Errorf("Name() = %s", p.Name())
	}
	if strings.Contains(string(p.JSON), "Payload") || !strings.Contains(string(p.JSON), `"mode":"observe"`) {
		t.Errorf("JSON form %s: want the settings without the payload's own keys", p.JSON)
	}
	for field, key := range map[string]string{
		"mode":             "<key>mode</key>",
		"telemetry":        "<key>telemetry</key>",
		"telemetry.redact": "<key>redact</key>",
		"telemetry.nope":   "<key>telemetry</key>", // a field not written: its nearest parent
		"":                 "<dict>\n\t\t\t<key>PayloadDisplayName</key>\n\t\t\t<string>coworkbridge settings",
	} {
		want := lineOf(t, data, strings.Split(key, "\n")[0])
		if field == "" {
			want = lineOf(t, data, "<!-- coworkbridge's settings") + 3 // the payload's <dict>
		}
		if got := p.Line(field); got != want {
			t.Errorf("Line(%q) = %d, want %d", field, got, want)
		}
	}
}

func TestReadMobileconfigOpensASignedProfile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "signed.mobileconfig"))
	if err != nil {
		t.Fatal(err)
	}
	mc, err := ReadMobileconfig(data)
	if err != nil {
		t.Fatal(err)
	}
	if !mc.Signed || len(mc.Signers) != 1 || mc.Signers[0] != "Example Corp MDM (Example Corp)" || len(mc.Payloads) != 1 {
		t.Fatalf("signed profile read as %+v", mc)
	}
	if n := mc.Payloads[0].Line("mode"); n != 0 {
		t.Errorf("a signed profile's field has line %d; its lines are not the file's", n)
	}
}

// A date in a payload is a problem of that payload, kept with its field, not a reason to read
// no profile: the payload's other problems are still found.
func TestADateInAPayloadIsOneOfItsProblems(t *testing.T) {
	good := string(exampleProfile(t))
	mc, err := ReadMobileconfig([]byte(strings.Replace(good, "<string>10s</string>", "<date>2026-01-01T00:00:00Z</date>", 1)))
	if err != nil || len(mc.Payloads) == 0 {
		t.Fatalf("ReadMobileconfig = %v, %+v", err, mc)
	}
	p := mc.Payloads[0]
	if len(p.ValueProblems) != 1 || p.ValueProblems[0].String() != "decision_timeout: a date cannot be a coworkbridge setting; use a string, number, boolean, array or dictionary" {
		t.Errorf("value problems %+v", p.ValueProblems)
	}
	if !strings.Contains(string(p.JSON), `"decision_timeout":null`) {
		t.Errorf("JSON %s: the date should stand as null", p.JSON)
	}
}

func TestReadMobileconfigSaysWhyAFileIsNoProfile(t *testing.T) {
	good := string(exampleProfile(t))
	tests := []struct{ name, data, want string }{
		{"managed preferences", `<plist><dict><key>mode</key><string>observe</string></dict></plist>`, `PayloadType is "", want "Configuration"`},
		{"no payload list", `<plist><dict><key>PayloadType</key><string>Configuration</string></dict></plist>`, "PayloadContent: missing"},
		{"a payload that is a string", `<plist><dict><key>PayloadType</key><string>Configuration</string><key>PayloadContent</key><array><string>x</string></array></dict></plist>`, "PayloadContent[0]: a string"},
		{"xml broken on a line", strings.Replace(good, "<key>mode</key>", "<key>mode</kye>", 1), "line " + itoa(lineOf(t, []byte(good), "<key>mode</key>"))},
		{"unknown element", strings.Replace(good, "<string>observe</string>", "<strin>observe</strin>", 1), "<strin> is not an element"},
		{"json", `{"version":1}`, "not a property list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadMobileconfig([]byte(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one saying %q", err, tt.want)
			}
		})
	}
}

func TestIsMobileconfigKnowsARenamedProfileByItsContent(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	signed, _ := os.ReadFile(filepath.Join("testdata", "signed.mobileconfig"))
	for path, want := range map[string]bool{
		write("a.mobileconfig", nil):              true,
		write("renamed.plist", exampleProfile(t)): true,
		write("signed.bin", signed):               true,
		write("prefs.plist", []byte(`<plist><dict><key>mode</key><string>observe</string></dict></plist>`)): false,
		write("managed.json", []byte(`{"version":1}`)):                                                      false,
		filepath.Join(dir, "missing.plist"):                                                                 false,
	} {
		if got := IsMobileconfig(path); got != want {
			t.Errorf("IsMobileconfig(%s) = %v, want %v", filepath.Base(path), got, want)
		}
	}
}

func TestAProfilePlistErrorNamesItsLine(t *testing.T) {
	data := []byte("<?xml version=\"1.0\"?>\n<plist>\n<dict>\n<key>mode</key>\n<integer>x</integer>\n</dict>\n</plist>\n")
	_, err := ProfileJSON(data)
	if err == nil || !strings.Contains(err.Error(), "line 5") {
		t.Fatalf("error %v, want one naming line 5", err)
	}
}

func TestIndexPlistNamesArrayItemsAndNestedKeys(t *testing.T) {
	data := []byte("<plist>\n<dict>\n<key>policy</key>\n<dict>\n<key>disabled_rules</key>\n<array>\n<string>a</string>\n<string>b</string>\n</array>\n</dict>\n</dict>\n</plist>")
	ix := indexPlist(data)
	for field, want := range map[string]int{"policy": 3, "policy.disabled_rules": 5, "policy.disabled_rules[1]": 8, "policy.disabled_rules[7]": 5, "nope": 0} {
		if got := ix.line(field); got != want {
			t.Errorf("line(%q) = %d, want %d", field, got, want)
		}
	}
}

func FuzzReadMobileconfig(f *testing.F) {
	f.Add(exampleProfile(f))
	if signed, err := os.ReadFile(filepath.Join("testdata", "signed.mobileconfig")); err == nil {
		f.Add(signed)
	}
	f.Add([]byte(`<plist><dict><key>PayloadType</key><string>Configuration</string><key>PayloadContent</key><array><dict><key>PayloadType</key><string>com.coworkbridge.agent</string></dict></array></dict></plist>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		mc, err := ReadMobileconfig(data)
		if err != nil {
			return
		}
		for _, p := range mc.Payloads {
			if p.Index < 1 || p.Index > p.Of || p.Line("mode") < 0 {
				t.Fatalf("payload %+v", p)
			}
		}
	})
}

func itoa(n int) string { return strconv.Itoa(n) }
