package upstream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

// FuzzLineFilter feeds arbitrary stdout through jsonLines: what it passes
// on is whole lines, each a JSON-RPC message or batch; everything else goes
// to the noise; a line longer than the cap is an error, and it never
// buffers more than the cap.
func FuzzLineFilter(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n",
		"banner\n" + `{"level":30,"msg":"hi"}` + "\n" + `{garbage` + "\n" + `[{"jsonrpc":"2.0","method":"x"}]` + "\n",
		`{"jsonrpc":"1.0"}` + "\n[]\n[1]\n" + `  {"jsonrpc":"2.0"}  ` + "\r\n",
		`{"jsonrpc":"2.0","params":"` + string(bytes.Repeat([]byte("x"), 300)) + `"}`,
		"\n\n\x00\xff{\n",
	} {
		f.Add([]byte(s), 64)
	}
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		max = 16 + max&1023
		var noise bytes.Buffer
		j := &jsonLines{r: bufio.NewReaderSize(bytes.NewReader(in), 16), noise: &noise, max: max}
		var out bytes.Buffer
		buf := make([]byte, 7)
		var err error
		for {
			var n int
			n, err = j.Read(buf)
			out.Write(buf[:n])
			if cap(j.line) > 2*max+64 {
				t.Fatalf("buffered %d bytes, cap %d", cap(j.line), max)
			}
			if err != nil {
				break
			}
		}
		if err != io.EOF && !errors.Is(err, errLineTooLong) {
			t.Fatalf("error %v", err)
		}
		for line := range bytes.Lines(out.Bytes()) {
			if len(line) > max {
				t.Fatalf("passed a line of %d bytes, cap %d", len(line), max)
			}
			if !isJSONRPC(line) || !json.Valid(line) {
				t.Fatalf("passed %q", line)
			}
		}
	})
}

// isJSONRPCUnmarshal is what isJSONRPC was before it scanned: a full
// json.Unmarshal of each line. FuzzIsJSONRPC holds the scan to it.
func isJSONRPCUnmarshal(line []byte) bool {
	b := bytes.TrimSpace(line)
	type message struct {
		JSONRPC string `json:"jsonrpc"`
	}
	switch {
	case len(b) == 0:
		return false
	case b[0] == '{':
		var m message
		return json.Unmarshal(b, &m) == nil && m.JSONRPC == "2.0"
	case b[0] == '[':
		var ms []message
		if json.Unmarshal(b, &ms) != nil || len(ms) == 0 {
			return false
		}
		for _, m := range ms {
			if m.JSONRPC != "2.0" {
				return false
			}
		}
		return true
	}
	return false
}

// FuzzIsJSONRPC: the scanning isJSONRPC says what a full Unmarshal said,
// and jsonDepth is the nesting depth encoding/json sees.
func FuzzIsJSONRPC(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"1.0"}`, `[]`, `[1]`, `[null]`, `{"JSONRPC":"2.0"}`,
		`{"jsonrpc":"2.0","jsonrpc":null}`, `{"jsonrpc":"2.0","jsonrpc":3}`, `{"jsonrpc":"\u0032.0"}`, `{"json\u0072pc":"2.0"}`,
		`[{"jsonrpc":"2.0","method":"x"},{"jsonrpc":"2.0","id":"a\"]}","result":[[{}]]}]`, `{"jsonrpc":"2.0"} x`,
		`{"jsonrpc":"2.0","x":tru}`, `{"jsonrpc":"2.0",}`, `{"level":30,"msg":"hi"}`, "\x00{\"jsonrpc\":\"2.0\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if got, want := isJSONRPC(in), isJSONRPCUnmarshal(in); got != want {
			t.Fatalf("isJSONRPC(%q) = %v, Unmarshal says %v", in, got, want)
		}
		b := bytes.TrimSpace(in)
		if len(b) > 0 && (b[0] == '{' || b[0] == '[') && json.Valid(b) {
			if got, want := jsonDepth(b), depthOf(t, b); got != want {
				t.Fatalf("jsonDepth(%q) = %d, want %d", in, got, want)
			}
		}
	})
}

// depthOf is the nesting depth of valid JSON, by encoding/json's tokens.
func depthOf(t *testing.T, b []byte) int {
	dec := json.NewDecoder(bytes.NewReader(b))
	d, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return deepest
		}
		if err != nil {
			t.Fatal(err)
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			d++
			deepest = max(deepest, d)
		case json.Delim('}'), json.Delim(']'):
			d--
		}
	}
}
