package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// jkind is the kind of a JSON value.
type jkind uint8

const (
	jNull jkind = iota
	jBool
	jNumber
	jString
	jArray
	jObject
)

func (k jkind) String() string {
	return [...]string{"null", "boolean", "number", "string", "array", "object"}[k]
}

// jval is a JSON value that remembers where it starts, so that errors about
// it can name a line and column. Objects keep their members in file order,
// duplicates included: the config parser reports those.
type jval struct {
	kind    jkind
	off     int    // byte offset of the value's first byte
	str     string // a string's value, or a number's text
	b       bool
	elems   []*jval
	members []jmember
}

type jmember struct {
	key string
	off int // byte offset of the key
	val *jval
}

// maxDepth bounds nesting, so that a hostile file cannot exhaust the stack.
const maxDepth = 200

// errDepth is reported for values nested deeper than maxDepth.
var errDepth = errors.New("nested too deeply")

// syntaxError is invalid JSON at a byte offset.
type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string { return e.msg }

// parseJSON parses data, which must hold one JSON value, into a tree with
// byte offsets, using json.Decoder's token stream.
func parseJSON(data []byte) (*jval, error) {
	// A full scan first: its SyntaxError offsets are exact (one past the
	// offending byte), unlike those of Decoder.Token.
	var raw json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		var se *json.SyntaxError
		if !errors.As(err, &se) {
			return nil, &syntaxError{off: 0, msg: err.Error()}
		}
		off := int(se.Offset)
		msg := strings.TrimPrefix(se.Error(), "json: ")
		if strings.HasPrefix(msg, "invalid character") {
			off--
		} else if strings.HasPrefix(msg, "unexpected end of JSON input") {
			msg = "unexpected end of file"
		}
		return nil, &syntaxError{off: off, msg: msg}
	}
	p := &jparser{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	p.dec.UseNumber()
	return p.value(0)
}

type jparser struct {
	data []byte
	dec  *json.Decoder
}

// next returns the offset of the next token: the decoder's offset past any
// whitespace, ':' and ','.
func (p *jparser) next() int {
	i := int(p.dec.InputOffset())
	for i < len(p.data) {
		switch p.data[i] {
		case ' ', '\t', '\n', '\r', ':', ',':
			i++
		default:
			return i
		}
	}
	return i
}

func (p *jparser) token() (int, json.Token, error) {
	off := p.next()
	tok, err := p.dec.Token()
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return off, nil, &syntaxError{off: off, msg: err.Error()}
	}
	return off, tok, nil
}

func (p *jparser) value(depth int) (*jval, error) {
	off, tok, err := p.token()
	if err != nil {
		return nil, err
	}
	v := &jval{off: off}
	switch t := tok.(type) {
	case nil:
		v.kind = jNull
	case bool:
		v.kind, v.b = jBool, t
	case json.Number:
		v.kind, v.str = jNumber, string(t)
	case string:
		v.kind, v.str = jString, t
	case json.Delim:
		if depth >= maxDepth {
			return nil, &syntaxError{off: off, msg: errDepth.Error()}
		}
		switch t {
		case '[':
			v.kind = jArray
			for p.dec.More() {
				e, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				v.elems = append(v.elems, e)
			}
		case '{':
			v.kind = jObject
			for p.dec.More() {
				koff, k, err := p.token()
				if err != nil {
					return nil, err
				}
				key, ok := k.(string)
				if !ok {
					return nil, &syntaxError{off: koff, msg: "want an object key"}
				}
				e, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				v.members = append(v.members, jmember{key: key, off: koff, val: e})
			}
		default:
			return nil, &syntaxError{off: off, msg: "unexpected " + t.String()}
		}
		if _, _, err := p.token(); err != nil { // the closing delimiter
			return nil, err
		}
	}
	return v, nil
}
