// Package dataset reads the tool-retrieval dataset format shared by tests,
// toolbench and the benchmarks: tools.jsonl (one MCP-shaped tool a line) and
// queries.jsonl (one query with its gold tools a line). Errors name the file
// and line of the bad record.
package dataset

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/toolsift/toolsift/tool"
)

// ErrFormat reports a record that does not follow the dataset format.
var ErrFormat = errors.New("dataset: bad record")

// Query is one retrieval query and the tools that answer it.
type Query struct {
	ID    string   `json:"id"`
	Query string   `json:"query"`
	Gold  []string `json:"gold"`
	// GoldGroups, when present, lists one group per needed step; any member
	// of a group satisfies it.
	GoldGroups [][]string `json:"gold_groups,omitempty"`
}

// Groups returns the gold as groups: GoldGroups when present, otherwise one
// group per gold name.
func (q Query) Groups() [][]string {
	if len(q.GoldGroups) > 0 {
		return q.GoldGroups
	}
	g := make([][]string, len(q.Gold))
	for i, name := range q.Gold {
		g[i] = []string{name}
	}
	return g
}

type toolRecord struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	Server       string          `json:"server"`
	Title        string          `json:"title"`
	OriginalName string          `json:"original_name"`
}

// ReadTools reads tools.jsonl records from r. file names the source in
// errors. Names must be present and unique. Blank lines are skipped.
func ReadTools(r io.Reader, file string) ([]tool.Tool, error) {
	var tools []tool.Tool
	seen := map[string]int{}
	err := eachLine(r, file, func(line int, b []byte) error {
		var rec toolRecord
		if err := json.Unmarshal(b, &rec); err != nil {
			return fmt.Errorf("%w: %s:%d: %v", ErrFormat, file, line, err)
		}
		if rec.Name == "" {
			return fmt.Errorf("%w: %s:%d: tool has no name", ErrFormat, file, line)
		}
		if prev, ok := seen[rec.Name]; ok {
			return fmt.Errorf("%w: %s:%d: tool %q already defined on line %d", ErrFormat, file, line, rec.Name, prev)
		}
		seen[rec.Name] = line
		if len(rec.InputSchema) > 0 && !json.Valid(rec.InputSchema) {
			return fmt.Errorf("%w: %s:%d: tool %q: inputSchema is not valid JSON", ErrFormat, file, line, rec.Name)
		}
		orig := rec.OriginalName
		if orig == "" {
			orig = rec.Name
		}
		t := tool.Tool{
			Name:         rec.Name,
			Server:       rec.Server,
			OriginalName: orig,
			Title:        rec.Title,
			Description:  rec.Description,
			InputSchema:  rec.InputSchema,
		}
		tools = append(tools, t.WithHash())
		return nil
	})
	return tools, err
}

// ReadQueries reads queries.jsonl records from r. file names the source in
// errors. Every query needs an id, a text and at least one gold tool.
func ReadQueries(r io.Reader, file string) ([]Query, error) {
	var qs []Query
	err := eachLine(r, file, func(line int, b []byte) error {
		var q Query
		if err := json.Unmarshal(b, &q); err != nil {
			return fmt.Errorf("%w: %s:%d: %v", ErrFormat, file, line, err)
		}
		switch {
		case q.ID == "":
			return fmt.Errorf("%w: %s:%d: query has no id", ErrFormat, file, line)
		case q.Query == "":
			return fmt.Errorf("%w: %s:%d: query %q has no text", ErrFormat, file, line, q.ID)
		case len(q.Gold) == 0 && len(q.GoldGroups) == 0:
			return fmt.Errorf("%w: %s:%d: query %q has no gold tools", ErrFormat, file, line, q.ID)
		}
		qs = append(qs, q)
		return nil
	})
	return qs, err
}

// MaxFileBytes bounds a dataset file (docs/limits.md): a larger one, or
// one that is not a regular file (a FIFO, /dev/zero), is refused before it
// is read.
const MaxFileBytes = 256 << 20

// open opens a dataset file: a regular file of at most MaxFileBytes,
// opened without blocking so that a FIFO cannot hang the reader.
func open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
	case !fi.Mode().IsRegular():
		err = fmt.Errorf("%s: not a regular file (mode %s)", path, fi.Mode().Type())
	case fi.Size() > MaxFileBytes:
		err = fmt.Errorf("%s: %d bytes, over the limit of %d", path, fi.Size(), MaxFileBytes)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("dataset: %w", err)
	}
	return f, nil
}

// LoadTools reads a tools.jsonl file.
func LoadTools(path string) ([]tool.Tool, error) {
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadTools(f, path)
}

// LoadToolsQualified reads a tools.jsonl file like [LoadTools], except that
// when tool names repeat across servers (a catalog of many MCP servers),
// every tool that has a server is renamed to qualify(server, name) — the
// name a hub sends it under — with its own name kept as OriginalName.
// shared counts the tools whose name another tool had before.
func LoadToolsQualified(path string, qualify func(server, name string) string) (tools []tool.Tool, shared int, err error) {
	f, err := open(path)
	if err != nil {
		return nil, 0, err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes))
	f.Close()
	if err != nil {
		return nil, 0, fmt.Errorf("dataset: %w", err)
	}
	type rec struct{ Server, Name string }
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var r rec
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.Name == "" {
			continue // ReadTools reports it, with its line
		}
		if seen[r.Name] {
			shared++
		}
		seen[r.Name] = true
	}
	if shared == 0 {
		tools, err = ReadTools(bytes.NewReader(data), path)
		return tools, 0, err
	}
	var out bytes.Buffer
	sc = bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var m map[string]json.RawMessage
		var r rec
		if json.Unmarshal(line, &m) == nil && json.Unmarshal(line, &r) == nil && r.Server != "" && r.Name != "" {
			m["original_name"], _ = json.Marshal(r.Name)
			m["name"], _ = json.Marshal(qualify(r.Server, r.Name))
			line, _ = json.Marshal(m)
		}
		out.Write(line) // one line out per line in, so errors keep their line numbers
		out.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return nil, 0, fmt.Errorf("dataset: %s: %w", path, err)
	}
	tools, err = ReadTools(&out, path)
	return tools, shared, err
}

// LoadQueries reads a queries.jsonl file.
func LoadQueries(path string) ([]Query, error) {
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadQueries(f, path)
}

func eachLine(r io.Reader, file string, fn func(line int, b []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if err := fn(line, b); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("dataset: %s:%d: %w", file, line+1, err)
	}
	return nil
}
