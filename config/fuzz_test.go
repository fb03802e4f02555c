package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestStripJSONC(t *testing.T) {
	tests := []struct {
		name, in, want, err string
	}{
		{"plain JSON", `{"a": [1, 2]}`, `{"a": [1, 2]}`, ""},
		{"line comment", "{\"a\": 1 // one\n}", "{\"a\": 1       \n}", ""},
		{"CRLF line comment", "{\"a\": 1 // one\r\n}", "{\"a\": 1       \r\n}", ""},
		{"block comment", "{/* a\nb */\"a\": 1}", "{    \n    \"a\": 1}", ""},
		{"comment markers in strings", `{"a": "// not /* a comment */"}`, `{"a": "// not /* a comment */"}`, ""},
		{"escaped quote", `{"a": "\" // still a string"} // gone`, `{"a": "\" // still a string"}        `, ""},
		{"escaped backslash", `{"a": "\\"} // gone`, `{"a": "\\"}        `, ""},
		{"trailing commas", `{"a": [1, 2,], "b": {"c": 1,},}`, `{"a": [1, 2 ], "b": {"c": 1 } }`, ""},
		{"trailing comma before a comment", "[1, // c\n]", "[1      \n]", ""},
		{"trailing comma after a string", `["a,",]`, `["a," ]`, ""},
		{"lone comma stays", `[,]`, `[,]`, ""},
		{"double comma stays", `[1,,]`, `[1,,]`, ""},
		{"comma after colon stays", `{"a":,}`, `{"a":,}`, ""},
		{"multibyte in comment", "[1 /* é */]", "[1         ]", ""},
		{"slash alone", `[1 / 2]`, `[1 / 2]`, ""},
		{"unterminated string", `["a, // b]`, `["a, // b]`, ""},
		{"unterminated comment", `[1 /* x`, "", "unterminated /* comment at 3"},
		{"comment at the end", `[1] /`, `[1] /`, ""},
		{"star slash only", `[1] /*/`, "", "unterminated /* comment at 4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := stripJSONC([]byte(tt.in))
			if tt.err != "" {
				var je *jsoncError
				if !errors.As(err, &je) {
					t.Fatalf("error = %v, want %s", err, tt.err)
				}
				if g := je.msg + " at " + itoa(je.off); g != tt.err {
					t.Errorf("error = %s, want %s", g, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("stripJSONC(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func FuzzStripJSONC(f *testing.F) {
	for _, s := range []string{`{"a": [1, 2,], /* c */ "b": "// x" // y` + "\n}", `["\"", "\\", ]`, `/* */`, `[,]`} {
		f.Add([]byte(s))
	}
	addConfigSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := stripJSONC(data)
		if err != nil {
			return
		}
		if len(out) != len(data) {
			t.Fatalf("length %d, want %d", len(out), len(data))
		}
		for i := range data {
			if (data[i] == '\n' || data[i] == '\r') != (out[i] == '\n' || out[i] == '\r') {
				t.Fatalf("line break at %d not kept", i)
			}
			if out[i] != data[i] && out[i] != ' ' {
				t.Fatalf("byte %d changed to %q, not a space", i, out[i])
			}
		}
		if json.Valid(data) && !bytes.Equal(out, data) {
			t.Fatalf("valid JSON changed: %q -> %q", data, out)
		}
		again, err := stripJSONC(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q -> %q (%v)", out, again, err)
		}
	})
}

const fuzzSecret = "FUZZ-SECRET-VALUE"

var positionRE = regexp.MustCompile(`^config: invalid: fuzz\.json:\d+:\d+: `)

// FuzzLoad fuzzes what Load does after reading the file: errors wrap
// ErrInvalid and name file:line:col, loaded servers validate, and an
// input's value shows nowhere.
func FuzzLoad(f *testing.F) {
	addConfigSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		p := &parser{
			file:      "fuzz.json",
			dir:       "/nonexistent",
			workspace: "/ws",
			inputVals: map[string]string{"token": fuzzSecret},
			lookup: func(name string) (string, bool) {
				if name == "SET" {
					return "set", true
				}
				return "", false
			},
			readFile: func(string) ([]byte, error) { return []byte("A=1\nB='x'\n"), nil },
		}
		cfg, err := p.parse(data)
		leakCheck := !bytes.Contains(data, []byte(fuzzSecret))
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error does not wrap ErrInvalid: %v", err)
			}
			if !positionRE.MatchString(err.Error()) {
				t.Fatalf("error has no file:line:col: %v", err)
			}
			if leakCheck && strings.Contains(err.Error(), fuzzSecret) {
				t.Fatalf("error shows the input's value: %v", err)
			}
			return
		}
		for _, w := range cfg.Warnings {
			if leakCheck && strings.Contains(w, fuzzSecret) {
				t.Fatalf("warning shows the input's value: %s", w)
			}
		}
		for name, sc := range cfg.Servers {
			if err := sc.validate(name); err != nil {
				t.Fatalf("server %q loaded but does not validate: %v", name, err)
			}
			if sc.Err != nil && !errors.Is(sc.Err, ErrInvalid) {
				t.Fatalf("server %q: Err does not wrap ErrInvalid: %v", name, sc.Err)
			}
			if leakCheck && (strings.Contains(sc.String(), fuzzSecret) || sc.Err != nil && strings.Contains(sc.Err.Error(), fuzzSecret)) {
				t.Fatalf("server %q shows the input's value: %s", name, sc)
			}
		}
	})
}

// addConfigSeeds adds the golden config files as seeds; the rest of the
// corpus is in testdata/fuzz.
func addConfigSeeds(f *testing.F) {
	files, _ := filepath.Glob("testdata/*/*.json")
	more, _ := filepath.Glob("testdata/*/.*/*.json")
	dot, _ := filepath.Glob("testdata/*/.*.json")
	for _, file := range append(append(files, more...), dot...) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}
