package cms

import (
	"errors"
	"fmt"
)

// element is one BER value: a primitive's bytes, or a constructed value's elements.
type element struct {
	class       int
	tag         int
	constructed bool
	prim        []byte
	kids        []*element
}

func (e *element) is(class, tag int) bool { return e.class == class && e.tag == tag }

// only is the single element inside an explicitly tagged value, or nil.
func (e *element) only() *element {
	if !e.constructed || len(e.kids) != 1 {
		return nil
	}
	return e.kids[0]
}

// octets is the value of an OCTET STRING, joining the pieces of a constructed one.
func (e *element) octets() []byte {
	if !e.constructed {
		return e.prim
	}
	var out []byte
	for _, k := range e.kids {
		out = append(out, k.octets()...)
	}
	return out
}

var errTruncated = errors.New("truncated")

// parse reads one element from the start of b and returns it with what follows it.
func parse(b []byte, depth int) (*element, []byte, error) {
	if depth > maxDepth {
		return nil, nil, fmt.Errorf("nested deeper than %d", maxDepth)
	}
	e, b, err := header(b)
	if err != nil {
		return nil, nil, err
	}
	n, b, indefinite, err := length(b)
	if err != nil {
		return nil, nil, err
	}
	if indefinite {
		if !e.constructed {
			return nil, nil, errors.New("a primitive value with an indefinite length")
		}
		return e, b, e.readUntilEnd(&b, depth)
	}
	body, rest := b[:n], b[n:]
	if !e.constructed {
		e.prim = body
		return e, rest, nil
	}
	for len(body) > 0 {
		k, r, err := parse(body, depth+1)
		if err != nil {
			return nil, nil, err
		}
		e.kids, body = append(e.kids, k), r
	}
	return e, rest, nil
}

// readUntilEnd reads the elements of an indefinite-length value up to its end-of-contents mark,
// advancing *b past it.
func (e *element) readUntilEnd(b *[]byte, depth int) error {
	for {
		if len(*b) < 2 {
			return errTruncated
		}
		if (*b)[0] == 0 && (*b)[1] == 0 {
			*b = (*b)[2:]
			return nil
		}
		k, r, err := parse(*b, depth+1)
		if err != nil {
			return err
		}
		e.kids, *b = append(e.kids, k), r
	}
}

// header reads an identifier: class, constructed bit and tag number (long form included).
func header(b []byte) (*element, []byte, error) {
	if len(b) == 0 {
		return nil, nil, errTruncated
	}
	e := &element{class: int(b[0] >> 6), constructed: b[0]&0x20 != 0, tag: int(b[0] & 0x1f)}
	b = b[1:]
	if e.tag != 0x1f {
		return e, b, nil
	}
	e.tag = 0
	for i := 0; ; i++ {
		if len(b) == 0 {
			return nil, nil, errTruncated
		}
		if i == 4 {
			return nil, nil, errors.New("a tag number too large")
		}
		c := b[0]
		b = b[1:]
		e.tag = e.tag<<7 | int(c&0x7f)
		if c&0x80 == 0 {
			return e, b, nil
		}
	}
}

// length reads a length: short, long (up to four bytes) or indefinite. A definite length is
// checked against what is left, so that no slice reaches past the input.
func length(b []byte) (n int, rest []byte, indefinite bool, err error) {
	if len(b) == 0 {
		return 0, nil, false, errTruncated
	}
	c := b[0]
	b = b[1:]
	switch {
	case c < 0x80:
		n = int(c)
	case c == 0x80:
		return 0, b, true, nil
	default:
		size := int(c & 0x7f)
		if size > 4 || size > len(b) {
			return 0, nil, false, errors.New("a length too large")
		}
		for _, d := range b[:size] {
			n = n<<8 | int(d)
		}
		b = b[size:]
	}
	if n > len(b) {
		return 0, nil, false, errTruncated
	}
	return n, b, false, nil
}
