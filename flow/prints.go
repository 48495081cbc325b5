package flow

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"net/url"
	"strings"
)

// What a session read is kept as prints: hashes of short runs of its distinctive tokens, chosen
// by winnowing, so that a later call can be asked whether it carries any of it without the data
// itself being kept anywhere. Any run of printK+printW-1 characters (11) of a token that a call
// carries, as it was read or decoded from base64, hex or percent-encoding, holds one of the
// token's prints: it spans a whole window, whose least hash was kept.
const (
	printK = 8 // characters one print hashes
	// printW is how many consecutive k-grams one print is chosen from, in a short token; long
	// tokens (a key's armoured lines) are thinned more, since a send of them carries long runs.
	printW, printWLong = 4, 16
	longToken          = 32
	// maxPrints bounds what a session keeps (4 bytes each, in its note): a key file or a
	// credentials file whole, and the first part of a larger read.
	maxPrints = 768
	// minToken: shorter tokens are words, numbers and flags, not data worth a print.
	minToken = 10
	// maxScan bounds what of one call is looked through, each decoding included.
	maxScan = 256 << 10
)

// Learn takes in what the call read, when it is the session's latest private read not yet seen:
// its text's prints join the session's (the oldest leave past maxPrints), and the read is seen.
// It reports whether the state changed.
func (s *State) Learn(call, text string) bool {
	if s.Private == nil || s.Private.Seen || s.Private.Call != cut(call) {
		return false
	}
	have := s.prints()
	seen := make(map[uint32]bool, len(have))
	for _, p := range have {
		seen[p] = true
	}
	for _, p := range printsOf(text) {
		if !seen[p] {
			seen[p] = true
			have = append(have, p)
		}
	}
	if len(have) > maxPrints {
		have = have[len(have)-maxPrints:]
	}
	s.setPrints(have)
	m := *s.Private // a copy: states handed out share their marks
	m.Seen = true
	s.Private = &m
	return true
}

// Knows reports whether the session's latest private read has been seen, so that a send can be
// judged by whether it carries what was read rather than by its shape.
func (s *State) Knows() bool { return s.Private != nil && s.Private.Seen }

// Carries reports whether text holds data the session read: a run of a read token, as read or
// decoded (base64, hex, percent-encoding, split across labels or parameters and joined again).
func (s *State) Carries(text string) bool {
	have := s.prints()
	if len(have) == 0 || text == "" {
		return false
	}
	set := make(map[uint32]bool, len(have))
	for _, p := range have {
		set[p] = true
	}
	found := false
	budget := maxScan
	for _, v := range variants(text[:min(len(text), maxScan)], 2) {
		if budget -= len(v); budget < 0 {
			break
		}
		eachGram(v, func(h uint32) bool {
			found = set[h]
			return !found
		})
		if found {
			return true
		}
	}
	return false
}

func (s *State) prints() []uint32 {
	raw, err := base64.StdEncoding.DecodeString(s.Prints)
	if err != nil {
		return nil
	}
	out := make([]uint32, len(raw)/4)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(raw[4*i:])
	}
	return out
}

func (s *State) setPrints(ps []uint32) {
	raw := make([]byte, 4*len(ps))
	for i, p := range ps {
		binary.LittleEndian.PutUint32(raw[4*i:], p)
	}
	s.Prints = base64.StdEncoding.EncodeToString(raw)
}

// printsOf winnows each distinctive token of text: of every printW consecutive k-grams, the one
// with the least hash (the rightmost on a tie) is a print.
func printsOf(text string) []uint32 {
	var out []uint32
	for _, tok := range tokens(text) {
		if !distinctive(tok) {
			continue
		}
		w := printW
		if len(tok) >= longToken {
			w = printWLong
		}
		var grams []uint32
		eachGram(tok, func(h uint32) bool { grams = append(grams, h); return true })
		last := -1
		for i := 0; len(grams) > 0 && (i == 0 || i+w <= len(grams)); i++ {
			best := i
			for j := i; j < min(i+w, len(grams)); j++ {
				if grams[j] <= grams[best] {
					best = j
				}
			}
			if best != last {
				out, last = append(out, grams[best]), best
			}
		}
		if len(out) >= maxPrints {
			return out[:maxPrints]
		}
	}
	return out
}

// eachGram calls f with the hash of each printK-byte run of s, until f returns false.
func eachGram(s string, f func(uint32) bool) {
	for i := 0; i+printK <= len(s); i++ {
		h := uint32(2166136261) // FNV-1a, written out: a hash object per run would allocate
		for j := i; j < i+printK; j++ {
			h = (h ^ uint32(s[j])) * 16777619
		}
		if !f(h) {
			return
		}
	}
}

// tokens splits text where data's characters end: letters, digits and - _ + / stay together,
// except that a path or a URL is split at its slashes (its folders are words, and a print of
// "https://" would be found in every link).
func tokens(text string) []string {
	var out []string
	for _, t := range strings.FieldsFunc(text, func(r rune) bool { return !tokenChar(r) }) {
		if strings.HasPrefix(t, "/") || strings.Contains(t, "//") {
			out = append(out, strings.FieldsFunc(t, func(r rune) bool { return r == '/' })...)
			continue
		}
		out = append(out, t)
	}
	return out
}

func tokenChar(r rune) bool {
	return r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' || r == '_' || r == '+' || r == '/'
}

// distinctive reports a token that is data rather than a word: long enough, and with digits among
// its letters, or long and mixed in case. A key, a token, an id, a hash, a password with digits
// are; "configuration" and "--recursive" are not.
func distinctive(tok string) bool {
	if len(tok) < minToken {
		return false
	}
	digits, upper, lower := 0, 0, 0
	for _, r := range tok {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case r >= 'A' && r <= 'Z':
			upper++
		case r >= 'a' && r <= 'z':
			lower++
		}
	}
	letters := upper + lower
	return digits >= 2 && letters >= 2 || len(tok) >= 16 && (digits >= 1 || upper >= 2 && lower >= 2)
}

// variants are text and what it decodes to, depth levels deep: percent-decoded, and each run of
// base64 or hex decoded, alone and joined with the runs beside it (data split across a name's
// labels or a query's parameters).
func variants(text string, depth int) []string {
	out := []string{text}
	if depth == 0 {
		return out
	}
	if strings.ContainsAny(text, "%+") {
		if u, err := url.QueryUnescape(text); err == nil && u != text {
			out = append(out, variants(u, depth-1)...)
		}
	}
	runs := encodedRuns(text)
	if len(runs) > 1 {
		runs = append(runs, strings.Join(runs, ""))
	}
	for _, r := range runs {
		for _, d := range decodings(r) {
			out = append(out, variants(d, depth-1)...)
		}
	}
	return out
}

// encodedRuns are text's runs of base64 or hex characters long enough to hold a print once
// decoded; a run with slashes (base64's, or a path's) also gives its pieces.
func encodedRuns(text string) []string {
	var out []string
	for _, r := range strings.FieldsFunc(text, func(r rune) bool {
		// '=' ends a run: padding is not needed to decode, and key=value is not data.
		return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '+' || r == '/' || r == '-' || r == '_')
	}) {
		out = append(out, r)
		if strings.Contains(r, "/") {
			out = append(out, strings.Split(r, "/")...)
		}
	}
	return slicesFilter(out, func(s string) bool { return len(s) >= 12 })
}

// decodings are what run decodes to as hex, and as base64 (standard or URL alphabet, padded or
// not), where the result reads as text.
func decodings(run string) []string {
	var out []string
	if len(run)%2 == 0 && isHex(run) {
		if b, err := hex.DecodeString(run); err == nil && printable(b) {
			out = append(out, string(b))
		}
	}
	bare := run
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		// A run cut anywhere decodes from its start: drop what cannot complete a character.
		cut := bare[:len(bare)-len(bare)%4]
		if len(bare)%4 >= 2 {
			cut = bare
		}
		if b, err := enc.DecodeString(cut); err == nil && printable(b) {
			out = append(out, string(b))
			break
		}
	}
	return out
}

func isHex(s string) bool {
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
			return false
		}
	}
	return true
}

// printable reports bytes that are mostly text: what decodes from data is, what decodes from a
// word that happens to be base64 is not.
func printable(b []byte) bool {
	if len(b) < printK {
		return false
	}
	bad := 0
	for _, c := range b {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' || c >= 0x7f {
			bad++
		}
	}
	return bad*10 <= len(b)
}

func slicesFilter(ss []string, keep func(string) bool) []string {
	out := ss[:0]
	for _, s := range ss {
		if keep(s) {
			out = append(out, s)
		}
	}
	return out
}
