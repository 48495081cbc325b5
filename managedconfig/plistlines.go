package managedconfig

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// plistIndex is where the values of an XML property list are written: the line of each key
// path ("policy.disabled_rules[0]", as Problems name fields), and the line of the first thing
// that is not a property list, for errors the plist library reports without one.
type plistIndex struct {
	lines   map[string]int
	badLine int
	bad     string
}

// indexPlist reads an XML property list. A binary one, or anything else that is not XML, gives
// an empty index: its problems are reported without lines.
func indexPlist(data []byte) plistIndex {
	ix := plistIndex{lines: map[string]int{}}
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if !bytes.HasPrefix(trimmed, []byte("<")) {
		return ix
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	w := plistWalk{ix: &ix, dec: dec}
	w.run()
	return ix
}

// line is the line of field or of its nearest enclosing value that is written; 0 when none is.
func (ix plistIndex) line(field string) int {
	for field != "" {
		if n, ok := ix.lines[field]; ok {
			return n
		}
		i := strings.LastIndexAny(field, ".[")
		if i < 0 {
			return 0
		}
		field = field[:i]
	}
	return 0
}

type plistFrame struct {
	path  string
	array bool
	index int
	key   string // in a dictionary, the key whose value comes next
}

type plistWalk struct {
	ix    *plistIndex
	dec   *xml.Decoder
	stack []plistFrame
}

func (w *plistWalk) fail(line int, format string, args ...any) {
	if w.ix.badLine == 0 {
		w.ix.badLine, w.ix.bad = line, fmt.Sprintf(format, args...)
	}
}

func (w *plistWalk) run() {
	for {
		line, _ := w.dec.InputPos()
		tok, err := w.dec.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			var se *xml.SyntaxError
			if errors.As(err, &se) {
				w.fail(se.Line, "%s", se.Msg)
			} else {
				w.fail(line, "%v", err)
			}
			return
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if !w.start(t.Name.Local, line) {
				return
			}
		case xml.EndElement:
			if (t.Name.Local == "dict" || t.Name.Local == "array") && len(w.stack) > 0 {
				w.stack = w.stack[:len(w.stack)-1]
			}
		}
	}
}

// start handles an element opening at line; false stops the walk at the first fault.
func (w *plistWalk) start(name string, line int) bool {
	switch name {
	case "plist":
		return true
	case "key":
		var k string
		if err := w.dec.DecodeElement(&k, &xml.StartElement{}); err != nil {
			w.fail(line, "a key that is not text: %v", err)
			return false
		}
		if len(w.stack) == 0 || w.stack[len(w.stack)-1].array {
			w.fail(line, "a <key> outside a dictionary")
			return false
		}
		top := &w.stack[len(w.stack)-1]
		top.key = k
		w.ix.lines[joinPath(top.path, k)] = line
		return true
	case "dict", "array":
		w.stack = append(w.stack, plistFrame{path: w.valuePath(line), array: name == "array"})
		return true
	case "string", "integer", "real", "true", "false", "date", "data":
		path := w.valuePath(line)
		var text string
		if err := w.dec.DecodeElement(&text, &xml.StartElement{}); err != nil {
			w.fail(line, "%s: %v", name, err)
			return false
		}
		if !scalarOK(name, strings.TrimSpace(text)) {
			w.fail(line, "%s: %q is not a valid <%s>", path, text, name)
			return false
		}
		return true
	}
	w.fail(line, "<%s> is not an element of a property list", name)
	return false
}

// valuePath names the value that opens at line, and records its line when it is an array item
// (a dictionary's values take the line of their key).
func (w *plistWalk) valuePath(line int) string {
	if len(w.stack) == 0 {
		return ""
	}
	top := &w.stack[len(w.stack)-1]
	if !top.array {
		return joinPath(top.path, top.key)
	}
	p := top.path + "[" + strconv.Itoa(top.index) + "]"
	top.index++
	w.ix.lines[p] = line
	return p
}

func scalarOK(kind, text string) bool {
	switch kind {
	case "integer":
		if _, err := strconv.ParseInt(text, 0, 64); err == nil {
			return true
		}
		_, err := strconv.ParseUint(text, 0, 64)
		return err == nil
	case "real":
		_, err := strconv.ParseFloat(text, 64)
		return err == nil
	}
	return true
}
