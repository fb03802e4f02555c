package mcp

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
