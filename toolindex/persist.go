package toolindex

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolsift/toolsift/tool"
)

// The saved form of an [Index] is a directory:
//
//	manifest.json          format, version, embedder ID, dimension, tool count,
//	                       and the name, size and SHA-256 of the two data files
//	tools-<gen>.jsonl      one tool (with its Hash; input schema as a string,
//	                       byte for byte) a line, sorted by name
//	vectors-<gen>.bin      "TSVEC001", uint32 dimension, uint32 count, then
//	                       count×dimension little-endian float32, in tool order
//
// Data files carry a generation in their name and are never overwritten;
// manifest.json is replaced last by an atomic rename, so a reader sees the
// old index or the new one, never a mix, and a crash mid-save leaves the old
// one intact. The lexical index is not saved: rebuilding it from the tools
// at [Load] is cheap (see BenchmarkLoad).
const (
	// minToolLine is the shortest line of a tools file: {"name":"a","hash":"b"}
	// and a newline.
	minToolLine    = 24
	manifestFile   = "manifest.json"
	manifestFormat = "toolsift-index"
	formatVersion  = 1
	vectorMagic    = "TSVEC001"
)

type manifest struct {
	Format    string    `json:"format"`
	Version   int       `json:"version"`
	Embedder  string    `json:"embedder"`
	Dimension int       `json:"dimension"`
	Tools     int       `json:"tools"`
	Saved     time.Time `json:"saved"`
	ToolsFile fileInfo  `json:"tools_file"`
	Vectors   fileInfo  `json:"vectors_file"`
	// The Semantic embedder's ID, dimension and vectors file, when the
	// index has one.
	Semantic          string    `json:"semantic,omitempty"`
	SemanticDimension int       `json:"semantic_dimension,omitempty"`
	SemanticVectors   *fileInfo `json:"semantic_vectors_file,omitempty"`
}

// savedTool is a Tool as saved: the input schema is kept as a string so
// that its bytes come back exactly (encoding/json would compact a
// RawMessage), and with it what the model is sent.
type savedTool struct {
	Name         string            `json:"name"`
	Server       string            `json:"server,omitempty"`
	OriginalName string            `json:"original_name,omitempty"`
	Title        string            `json:"title,omitempty"`
	Description  string            `json:"description,omitempty"`
	InputSchema  *string           `json:"input_schema,omitempty"`
	Annotations  *tool.Annotations `json:"annotations,omitempty"`
	Hash         string            `json:"hash"`
}

func toSaved(t tool.Tool) savedTool {
	s := savedTool{Name: t.Name, Server: t.Server, OriginalName: t.OriginalName, Title: t.Title,
		Description: t.Description, Annotations: t.Annotations, Hash: t.Hash}
	if t.InputSchema != nil {
		schema := string(t.InputSchema)
		s.InputSchema = &schema
	}
	return s
}

func (s savedTool) tool() tool.Tool {
	t := tool.Tool{Name: s.Name, Server: s.Server, OriginalName: s.OriginalName, Title: s.Title,
		Description: s.Description, Annotations: s.Annotations, Hash: s.Hash}
	if s.InputSchema != nil {
		t.InputSchema = json.RawMessage(*s.InputSchema)
	}
	return t
}

type fileInfo struct {
	Name   string `json:"name"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// Save writes the index to dir, creating it if needed and replacing an
// index saved there before. Searches and updates may run during Save; it
// saves the state of one instant. Two Indexes must not save to the same
// directory at the same time.
func (ix *Index) Save(dir string) error {
	ix.saveMu.Lock()
	defer ix.saveMu.Unlock()
	snap, saved := ix.saveState()
	var dims [maxSignals]int
	for s := range ix.sigs {
		dims[s] = saved[s].dim
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("toolindex: save: %w", err)
	}
	gen := newGeneration()
	m := manifest{
		Format:    manifestFormat,
		Version:   formatVersion,
		Embedder:  ix.Embedder().ID(),
		Dimension: dims[sigVector],
		Tools:     len(snap),
		Saved:     time.Now().UTC(),
	}
	var err error
	m.ToolsFile, err = writeFile(dir, "tools-"+gen+".jsonl", func(w io.Writer) error {
		enc := json.NewEncoder(w)
		for _, e := range snap {
			if err := enc.Encode(savable(e.tool)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	vectors := func(name string, s int) (fileInfo, error) {
		dim := dims[s]
		return writeFile(dir, name, func(w io.Writer) error {
			var hdr [16]byte
			copy(hdr[:8], vectorMagic)
			binary.LittleEndian.PutUint32(hdr[8:], uint32(dim))
			binary.LittleEndian.PutUint32(hdr[12:], uint32(len(snap)))
			if _, err := w.Write(hdr[:]); err != nil {
				return err
			}
			buf := make([]byte, 4*dim)
			vec := make([]float32, dim)
			for i := range snap {
				saved[s].vector(vec, i)
				for i, x := range vec {
					binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(x))
				}
				if _, err := w.Write(buf); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if m.Vectors, err = vectors("vectors-"+gen+".bin", sigVector); err != nil {
		return err
	}
	if sem := ix.Semantic(); sem != nil {
		fi, err := vectors("vectors-semantic-"+gen+".bin", sigSemantic)
		if err != nil {
			return err
		}
		m.Semantic, m.SemanticDimension, m.SemanticVectors = sem.ID(), dims[sigSemantic], &fi
	}
	mb, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("toolindex: save: %w", err)
	}
	if _, err := writeFile(dir, manifestFile, func(w io.Writer) error {
		_, err := w.Write(append(mb, '\n'))
		return err
	}); err != nil {
		return err
	}
	// The new manifest is in place; older generations are garbage, and so
	// are the temporary files of saves that were killed (only one Save
	// writes to dir at a time, so none of them is in use).
	entries, _ := os.ReadDir(dir)
	for _, de := range entries {
		n := de.Name()
		keep := n == m.ToolsFile.Name || n == m.Vectors.Name || m.SemanticVectors != nil && n == m.SemanticVectors.Name
		if !keep && isDataFile(n) || isTempFile(n) {
			os.Remove(filepath.Join(dir, n))
		}
	}
	return nil
}

// saveState returns the entries sorted by name and, for each signal, a
// copy of their vectors in that order (vector i is snap[i]'s), taken under
// one read lock: the state of one instant, in int16 codes (half of the
// float32 vectors they are written as).
func (ix *Index) saveState() ([]*entry, [maxSignals]rows) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	snap := ix.sorted
	if snap == nil {
		snap = slices.Collect(maps.Values(ix.tools))
		slices.SortFunc(snap, func(a, b *entry) int { return cmp.Compare(a.tool.Name, b.tool.Name) })
	}
	var out [maxSignals]rows
	for s, sig := range ix.sigs {
		vs := &sig.vecs
		o := &out[s]
		o.dim = sig.dim
		if vs.dim == 0 {
			continue
		}
		o.codes = make([]int16, len(snap)*vs.dim)
		o.factor = make([]float32, len(snap))
		for i, e := range snap {
			o.factor[i] = vs.row(o.codes[i*vs.dim:(i+1)*vs.dim], e.slot)
		}
	}
	return snap, out
}

// isTempFile reports whether name is one of writeFile's temporary files.
func isTempFile(name string) bool {
	base, _, ok := strings.Cut(name, ".tmp-")
	return ok && strings.HasPrefix(base, ".") && (isDataFile(base[1:]) || base[1:] == manifestFile)
}

// savable returns t as it is saved. encoding/json replaces invalid UTF-8
// with U+FFFD, so a tool with some comes back from [Load] with other bytes:
// its hash is then recomputed over the bytes Load will see, so that the
// hash always matches the content (the live tool, with its own bytes and
// hash, is then seen as changed, which it is).
func savable(t tool.Tool) savedTool {
	st := toSaved(t)
	if utf8.ValidString(t.Name) && utf8.ValidString(t.Description) && utf8.Valid(t.InputSchema) &&
		utf8.ValidString(t.Server) && utf8.ValidString(t.OriginalName) && utf8.ValidString(t.Title) {
		return st
	}
	b, err := json.Marshal(st)
	if err != nil {
		return st
	}
	var back savedTool
	if err := json.Unmarshal(b, &back); err != nil {
		return st
	}
	back.Hash = tool.ContentHash(back.tool())
	return back
}

func isDataFile(name string) bool {
	return (strings.HasPrefix(name, "tools-") && strings.HasSuffix(name, ".jsonl")) ||
		(strings.HasPrefix(name, "vectors-") && strings.HasSuffix(name, ".bin"))
}

func newGeneration() string {
	var b [4]byte
	rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
}

// writeFile writes dir/name atomically (temporary file, fsync, rename) and
// returns its size and SHA-256.
func writeFile(dir, name string, write func(io.Writer) error) (fileInfo, error) {
	path := filepath.Join(dir, name)
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return fileInfo{}, fmt.Errorf("toolindex: save %s: %w", path, err)
	}
	defer os.Remove(f.Name()) // no-op once renamed
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(f, h)}
	bw := bufio.NewWriterSize(cw, 1<<16)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return fileInfo{}, fmt.Errorf("toolindex: save %s: %w", path, err)
	}
	return fileInfo{Name: name, Bytes: cw.n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Load reads an index saved by Save from dir. emb must be the embedder the
// index was built with (same ID), and opts.Semantic its semantic embedder
// (same ID, or nil for an index saved without one), or Load returns an
// error wrapping [ErrEmbedderMismatch]; nothing is embedded. Missing, truncated or altered
// files give errors wrapping [ErrCorrupt] that name the file. opts are the
// options of the returned index, as for [New].
func Load(ctx context.Context, dir string, emb Embedder, opts *Options) (*Index, error) {
	ix, err := New(emb, opts)
	if err != nil {
		return nil, err
	}
	mpath := filepath.Join(dir, manifestFile)
	mb, err := os.ReadFile(mpath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, mpath, err)
		}
		return nil, fmt.Errorf("toolindex: load: %w", err)
	}
	var m manifest
	if err := json.Unmarshal(mb, &m); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, mpath, err)
	}
	switch {
	case m.Format != manifestFormat:
		return nil, fmt.Errorf("%w: %s: format %q, want %q", ErrCorrupt, mpath, m.Format, manifestFormat)
	case m.Version != formatVersion:
		return nil, fmt.Errorf("%w: %s: format version %d, this build reads %d", ErrCorrupt, mpath, m.Version, formatVersion)
	case m.Embedder != emb.ID():
		return nil, fmt.Errorf("%w: %s was built with %q, loading with %q", ErrEmbedderMismatch, dir, m.Embedder, emb.ID())
	case m.Semantic != semanticID(ix):
		return nil, fmt.Errorf("%w: %s was built with semantic embedder %q, loading with %q", ErrEmbedderMismatch, dir, m.Semantic, semanticID(ix))
	case m.Tools < 0 || m.Dimension < 0 || (m.Tools > 0 && m.Dimension == 0):
		return nil, fmt.Errorf("%w: %s: %d tools of dimension %d", ErrCorrupt, mpath, m.Tools, m.Dimension)
	case m.Semantic != "" && (m.SemanticVectors == nil || m.SemanticDimension < 0 || (m.Tools > 0 && m.SemanticDimension == 0)):
		return nil, fmt.Errorf("%w: %s: semantic vectors missing or of dimension %d", ErrCorrupt, mpath, m.SemanticDimension)
	case m.Semantic == "" && m.SemanticVectors != nil:
		return nil, fmt.Errorf("%w: %s: semantic vectors without a semantic embedder", ErrCorrupt, mpath)
	}
	files := []fileInfo{m.ToolsFile, m.Vectors}
	if m.SemanticVectors != nil {
		files = append(files, *m.SemanticVectors)
	}
	for _, f := range files {
		if !isDataFile(f.Name) || filepath.Base(f.Name) != f.Name {
			return nil, fmt.Errorf("%w: %s: bad data file name %q", ErrCorrupt, mpath, f.Name)
		}
	}

	tb, tpath, err := readChecked(dir, m.ToolsFile)
	if err != nil {
		return nil, err
	}
	// Counts are checked against the sizes of the files before anything
	// is allocated by them: a tool is a line of at least minToolLine bytes,
	// a vector 4 bytes per dimension.
	if m.Tools > len(tb)/minToolLine {
		return nil, fmt.Errorf("%w: %s: %d tools cannot fit in %d bytes", ErrCorrupt, mpath, m.Tools, len(tb))
	}
	tools := make([]tool.Tool, 0, m.Tools)
	dec := json.NewDecoder(bytes.NewReader(tb))
	for line := 1; ; line++ {
		var st savedTool
		if err := dec.Decode(&st); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%w: %s:%d: %w", ErrCorrupt, tpath, line, err)
		}
		t := st.tool()
		if t.Name == "" || t.Hash == "" {
			return nil, fmt.Errorf("%w: %s:%d: tool without name or hash", ErrCorrupt, tpath, line)
		}
		tools = append(tools, t)
	}
	if len(tools) != m.Tools {
		return nil, fmt.Errorf("%w: %s: %d tools, manifest says %d", ErrCorrupt, tpath, len(tools), m.Tools)
	}

	var vecs [maxSignals][]float32 // all vectors of a signal; entries slice into it
	if vecs[sigVector], err = readVectors(dir, m.Vectors, m.Tools, m.Dimension); err != nil {
		return nil, err
	}
	if m.SemanticVectors != nil {
		if vecs[sigSemantic], err = readVectors(dir, *m.SemanticVectors, m.Tools, m.SemanticDimension); err != nil {
			return nil, err
		}
	}

	terms := make([]fieldTerms, len(tools))
	analyzeAll(len(tools), func(i int) { terms[i] = analyzeTool(tools[i]) })
	dims := [maxSignals]int{m.Dimension, m.SemanticDimension}
	for s, sig := range ix.sigs {
		sig.dim = dims[s]
		if sig.dim > 0 {
			sig.vecs.dim = sig.dim
			sig.vecs.reserve(len(tools))
		}
	}
	for i, t := range tools {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if _, dup := ix.tools[t.Name]; dup {
			return nil, fmt.Errorf("%w: %s:%d: duplicate tool %q", ErrCorrupt, tpath, i+1, t.Name)
		}
		var vec [maxSignals][]float32
		for s := range ix.sigs {
			d := dims[s]
			vec[s] = vecs[s][i*d : (i+1)*d : (i+1)*d]
		}
		ix.putLocked(t, vec, terms[i], nil)
	}
	ix.vectorsDoneLocked()
	return ix, nil
}

// semanticID is the ID of ix's semantic embedder, "" without one.
func semanticID(ix *Index) string {
	if sem := ix.Semantic(); sem != nil {
		return sem.ID()
	}
	return ""
}

// readVectors reads a vectors file named by the manifest: n vectors of
// dimension dim, in tool order.
func readVectors(dir string, fi fileInfo, n, dim int) ([]float32, error) {
	vb, vpath, err := readChecked(dir, fi)
	if err != nil {
		return nil, err
	}
	if int64(dim) > math.MaxUint32 || (n > 0 && (len(vb) < 16 || dim > (len(vb)-16)/4/n)) {
		return nil, fmt.Errorf("%w: %s: %d vectors of dimension %d cannot fit in %d bytes", ErrCorrupt, vpath, n, dim, len(vb))
	}
	want := 16 + 4*dim*n
	if len(vb) != want || string(vb[:8]) != vectorMagic ||
		binary.LittleEndian.Uint32(vb[8:]) != uint32(dim) ||
		binary.LittleEndian.Uint32(vb[12:]) != uint32(n) {
		return nil, fmt.Errorf("%w: %s: header or size does not match %d vectors of dimension %d", ErrCorrupt, vpath, n, dim)
	}
	all := make([]float32, dim*n)
	for i := range all {
		all[i] = math.Float32frombits(binary.LittleEndian.Uint32(vb[16+4*i:]))
	}
	return all, nil
}

// readChecked reads a data file named by the manifest and checks its size
// and SHA-256.
func readChecked(dir string, fi fileInfo) ([]byte, string, error) {
	path := filepath.Join(dir, fi.Name)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, path, fmt.Errorf("%w: %s: %w", ErrCorrupt, path, err)
	}
	sum := sha256.Sum256(b)
	if int64(len(b)) != fi.Bytes || hex.EncodeToString(sum[:]) != fi.SHA256 {
		return nil, path, fmt.Errorf("%w: %s: size or SHA-256 differs from %s", ErrCorrupt, path, manifestFile)
	}
	return b, path, nil
}
