package tool

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Tool is one callable tool as toolsift sees it, whatever its source (an MCP
// server, a local Go function, a dataset file).
//
// Name is the key everywhere in toolsift: unique within an Index and, for
// tools that come from upstream.Hub, a valid OpenAI function name. OriginalName is
// the name the tool has on its own server (equal to Name when nothing was
// namespaced).
type Tool struct {
	Name         string          `json:"name"`
	Server       string          `json:"server,omitempty"`
	OriginalName string          `json:"original_name,omitempty"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	// OutputSchema is the JSON schema of the tool's structured results
	// (MCP outputSchema), when the server gives one. It is not sent to the
	// model, so it is not part of Hash; upstream.Hub still reports a tool whose
	// output schema changed as changed.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Annotations  *Annotations    `json:"annotations,omitempty"`

	// Hash is the content hash of Name, Description and InputSchema as
	// computed by ContentHash. Producers (upstream.Hub, Index) fill it in so that
	// consumers can cache per tool without hashing again; when it is empty,
	// call ContentHash.
	Hash string `json:"hash,omitempty"`
}

// Annotations are the MCP tool annotations: hints worth keeping for ranking
// and display, and the title given there. A nil pointer means the server did
// not say; readOnlyHint and idempotentHint default to false, so false is
// kept as nil.
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// ContentHash returns the hex SHA-256 of the tool's name, description and
// input schema. The schema is canonicalised first (object keys sorted, no
// insignificant white space), so the same schema sent with its keys in
// another order hashes the same. Title, server, output schema and
// annotations are not part of the hash: they do not change what the model
// is sent, and the hash keys what is derived from that (vectors, token
// costs).
func ContentHash(t Tool) string {
	h := sha256.New()
	h.Write([]byte(t.Name))
	h.Write([]byte{0})
	h.Write([]byte(t.Description))
	h.Write([]byte{0})
	h.Write(canonicalJSON(t.InputSchema))
	return hex.EncodeToString(h.Sum(nil))
}

// WithHash returns t with Hash set to ContentHash(t).
func (t Tool) WithHash() Tool {
	t.Hash = ContentHash(t)
	return t
}

// canonicalJSON re-encodes raw with sorted keys. Invalid JSON is returned
// compacted as far as possible, or as is, so that hashing never fails.
func canonicalJSON(raw json.RawMessage) []byte {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err == nil {
		if out, err := json.Marshal(v); err == nil {
			return out
		}
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) == nil {
		return buf.Bytes()
	}
	return raw
}
