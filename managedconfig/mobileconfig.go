package managedconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/coworkbridge/coworkbridge/internal/cms"
	"howett.net/plist"
)

// IsMobileconfig reports whether path is read as a configuration profile as an admin uploads it
// to an MDM (XML, or signed), rather than as managed preferences or JSON: by its name, or, for
// a profile renamed, by its content (a signed message, or a property list with payloads).
func IsMobileconfig(path string) bool {
	if strings.HasSuffix(path, ".mobileconfig") {
		return true
	}
	// Never blocking on a FIFO named by mistake, nor reading a device: only a plain file's head.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	head := make([]byte, 64<<10)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	return cms.Looks(head) || bytes.Contains(head, []byte("<key>PayloadContent</key>"))
}

// Mobileconfig is what a configuration profile holds for coworkbridge.
type Mobileconfig struct {
	// Signers names the certificates of a signed profile; nil when it is not signed.
	Signers []string
	Signed  bool
	// Payloads are the payloads of coworkbridge's type, in the profile's order.
	Payloads []ProfilePayload
	// Others are the types of the profile's other payloads.
	Others []string
}

// ProfilePayload is one payload of coworkbridge's type: the settings macOS would write to
// managed preferences, in the JSON form every configuration is checked in.
type ProfilePayload struct {
	// Index is the payload's place in PayloadContent, from 1; Of is how many there are.
	Index, Of   int
	Identifier  string
	DisplayName string
	JSON        []byte
	// ValueProblems are the values JSON cannot hold (dates, data), written as null in JSON.
	ValueProblems []Problem
	ix            plistIndex
	path          string
}

// Name says which payload this is, as an admin finds it in the profile.
func (p ProfilePayload) Name() string {
	s := fmt.Sprintf("payload %d of %d", p.Index, p.Of)
	if p.DisplayName != "" {
		s += fmt.Sprintf(" %q", p.DisplayName)
	}
	if p.Identifier != "" {
		s += " (" + p.Identifier + ")"
	}
	return s
}

// Line is the line of the profile on which field (as Problems name it) is written; 0 when it
// is not known (a signed or binary profile, or a field that is not there).
func (p ProfilePayload) Line(field string) int {
	if field == "" {
		return p.ix.line(p.path)
	}
	return p.ix.line(p.path + "." + field)
}

// ReadMobileconfigFile reads the configuration profile in path, bounded as every
// configuration file is.
func ReadMobileconfigFile(path string) (Mobileconfig, error) {
	data, err := readLimited(path)
	if err != nil {
		return Mobileconfig{}, err
	}
	return ReadMobileconfig(data)
}

// ReadMobileconfig reads a configuration profile, XML or binary, signed (CMS, DER or BER) or
// not, and returns its payloads of coworkbridge's type. A profile with none is not an error
// here: the caller says what that means.
func ReadMobileconfig(data []byte) (Mobileconfig, error) {
	var mc Mobileconfig
	content := data
	if cms.Looks(data) {
		m, err := cms.Parse(data)
		if err != nil {
			return mc, fmt.Errorf("a signed profile that cannot be read: %w", err)
		}
		content, mc.Signed, mc.Signers = m.Content, true, m.Signers
	}
	var ix plistIndex
	if !mc.Signed { // a signed profile's lines are not the file's
		ix = indexPlist(content)
	}
	var v any
	if _, err := plist.Unmarshal(content, &v); err != nil {
		if ix.badLine > 0 {
			return mc, fmt.Errorf("line %d: not a property list: %s", ix.badLine, ix.bad)
		}
		return mc, fmt.Errorf("not a property list: %w", err)
	}
	top, ok := v.(map[string]any)
	if !ok {
		return mc, fmt.Errorf("the property list holds a %s, want a configuration profile (a dictionary)", plistKind(v))
	}
	if t, _ := top["PayloadType"].(string); t != "Configuration" {
		return mc, fmt.Errorf("PayloadType is %q, want \"Configuration\": this is not a configuration profile (managed preferences are validated as a .plist file)", t)
	}
	items, ok := top["PayloadContent"].([]any)
	if !ok {
		return mc, errors.New("PayloadContent: missing or not an array; a profile lists its payloads there")
	}
	for i, it := range items {
		d, ok := it.(map[string]any)
		if !ok {
			return mc, fmt.Errorf("PayloadContent[%d]: a %s, want a payload (a dictionary)", i, plistKind(it))
		}
		if err := mc.add(d, i, len(items), ix); err != nil {
			return mc, err
		}
	}
	return mc, nil
}

func (mc *Mobileconfig) add(d map[string]any, i, of int, ix plistIndex) error {
	typ, _ := d["PayloadType"].(string)
	if typ != ProfileDomain {
		mc.Others = append(mc.Others, typ)
		return nil
	}
	p := ProfilePayload{Index: i + 1, Of: of, ix: ix, path: fmt.Sprintf("PayloadContent[%d]", i)}
	p.Identifier, _ = d["PayloadIdentifier"].(string)
	p.DisplayName, _ = d["PayloadDisplayName"].(string)
	for _, k := range slices.Collect(maps.Keys(d)) {
		if strings.HasPrefix(k, "Payload") { // the payload's own description, not a setting
			delete(d, k)
		}
	}
	var buf bytes.Buffer
	writeJSON(&buf, d, "", &p.ValueProblems)
	p.JSON = buf.Bytes()
	mc.Payloads = append(mc.Payloads, p)
	return nil
}
