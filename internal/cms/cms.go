// Package cms takes the signed content out of a CMS (PKCS #7) SignedData message, the form in
// which MDM consoles and `security cms -S` export a signed configuration profile, and names the
// certificates that came with it. It reads BER as well as DER: indefinite lengths and octet
// strings split into pieces, as streaming signers write them.
//
// It does not verify the signature or the certificates' chain: the Mac that installs the
// profile does that against its own trust settings, and a check here would only say what the
// MDM says again. It reads messages of any size the caller gives it, within a nesting depth.
package cms

import (
	"bytes"
	"errors"
	"fmt"
)

// BER identifiers of what a SignedData holds.
const (
	tagInteger     = 0x02
	tagOctetString = 0x04
	tagOID         = 0x06
	tagSequence    = 0x10
	tagSet         = 0x11

	classUniversal = 0
	classContext   = 2
)

// maxDepth bounds nesting: a certificate is about ten levels deep, and a hostile file must not
// make the reader recurse without end.
const maxDepth = 64

// OID bodies (without tag and length) of what this package tells apart.
const (
	oidSignedData = "\x2a\x86\x48\x86\xf7\x0d\x01\x07\x02" // 1.2.840.113549.1.7.2
	oidData       = "\x2a\x86\x48\x86\xf7\x0d\x01\x07\x01" // 1.2.840.113549.1.7.1
	oidCommonName = "\x55\x04\x03"                         // 2.5.4.3
	oidOrgName    = "\x55\x04\x0a"                         // 2.5.4.10
)

// Message is what a SignedData carries.
type Message struct {
	// Content is the signed content (for a profile, its property list).
	Content []byte
	// Signers names the certificates that came with the message, by subject common name and
	// organisation ("Example Corp MDM (Example Corp)"), in the order they are stored.
	Signers []string
}

// Looks reports whether data begins as a DER or BER SEQUENCE, as every CMS message does and
// no property list or JSON file does.
func Looks(data []byte) bool { return len(data) > 2 && data[0] == 0x30 }

// Parse reads a CMS ContentInfo holding SignedData with the content inside (not detached).
func Parse(data []byte) (Message, error) {
	top, rest, err := parse(data, 0)
	if err != nil {
		return Message{}, fmt.Errorf("not a CMS message: %w", err)
	}
	if len(bytes.TrimRight(rest, "\x00")) > 0 {
		return Message{}, fmt.Errorf("not a CMS message: %d bytes after its end", len(rest))
	}
	if !top.is(classUniversal, tagSequence) || len(top.kids) < 2 || !top.kids[0].is(classUniversal, tagOID) {
		return Message{}, errors.New("not a CMS message: want a ContentInfo (a content type and its content)")
	}
	if string(top.kids[0].prim) != oidSignedData {
		return Message{}, errors.New("a CMS message, but not signed data (it may be encrypted; export the profile signed only)")
	}
	sd := top.kids[1].only()
	if sd == nil || !sd.is(classUniversal, tagSequence) || len(sd.kids) < 4 {
		return Message{}, errors.New("signed data is malformed: want version, digest algorithms, content, signer infos")
	}
	var m Message
	if err := m.readContent(sd.kids[2]); err != nil {
		return Message{}, err
	}
	for _, k := range sd.kids[3:] {
		if k.is(classContext, 0) {
			for _, cert := range k.kids {
				m.Signers = append(m.Signers, subjectName(cert))
			}
		}
	}
	return m, nil
}

func (m *Message) readContent(eci *element) error {
	if !eci.is(classUniversal, tagSequence) || len(eci.kids) == 0 || !eci.kids[0].is(classUniversal, tagOID) {
		return errors.New("signed data is malformed: its content has no type")
	}
	if string(eci.kids[0].prim) != oidData {
		return errors.New("signed data holds content of another type than data")
	}
	if len(eci.kids) < 2 {
		return errors.New("the signature is detached: the profile itself is not in this file; export it with its content")
	}
	oct := eci.kids[1].only()
	if oct == nil || oct.class != classUniversal || oct.tag != tagOctetString {
		return errors.New("signed data is malformed: its content is not an octet string")
	}
	m.Content = oct.octets()
	return nil
}

// subjectName is "CN (O)" of a certificate's subject, or "" when it has neither.
func subjectName(cert *element) string {
	// Certificate ::= SEQUENCE { tbs SEQUENCE { [0] version?, serial, sigAlg, issuer, validity, subject, ... } }
	if len(cert.kids) == 0 {
		return ""
	}
	tbs := cert.kids[0].kids
	if len(tbs) > 0 && tbs[0].is(classContext, 0) {
		tbs = tbs[1:]
	}
	if len(tbs) < 5 {
		return ""
	}
	var cn, org string
	for _, rdn := range tbs[4].kids { // SET OF AttributeTypeAndValue
		for _, atv := range rdn.kids {
			if len(atv.kids) != 2 || !atv.kids[0].is(classUniversal, tagOID) || atv.kids[1].constructed {
				continue
			}
			switch {
			case string(atv.kids[0].prim) == oidCommonName:
				cn = string(atv.kids[1].prim)
			case string(atv.kids[0].prim) == oidOrgName:
				org = string(atv.kids[1].prim)
			}
		}
	}
	switch {
	case cn != "" && org != "":
		return cn + " (" + org + ")"
	case cn != "":
		return cn
	}
	return org
}
