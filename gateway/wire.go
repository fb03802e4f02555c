package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
)

// Both wires on one endpoint. MCP 2026-07-28 has no sessions: no
// initialize, the protocol version and the client's capabilities in each
// request (the Mcp-Protocol-Version header and the request's _meta), and
// the go-sdk serves it over HTTP only from a stateless handler (a handler
// with sessions answers such a request with UnsupportedProtocolVersion,
// and a client falls back to 2025-11-25). Clients of 2025-11-25 and
// before want sessions: a tool list of their own that found tools join.
// So the handler serves both, and byWire picks per request:
//
//   - a request naming a session (Mcp-Session-Id) goes to the sessions;
//   - one whose Mcp-Protocol-Version header is 2026-07-28 or later goes to
//     the stateless handler (the go-sdk client sends it on every request
//     of that revision, server/discover included);
//   - a POST without that header whose JSON-RPC body (or a message of its
//     batch) carries a _meta io.modelcontextprotocol/protocolVersion of
//     2026-07-28 or later goes there too, and is told the header is
//     missing (the body is read once, by bodyDeadline, and re-read here);
//   - everything else (initialize, GET and DELETE of a session, requests
//     of older revisions) goes to the sessions.
//
// The protections stand in front of both (bearer token, Origin, the
// body's deadline and size); the session guard (cap, binding to the
// credential) is the sessions'.

// wire2026 is the first revision served without sessions.
const wire2026 = "2026-07-28"

// byWire routes each request to stateless or stateful, as above.
func byWire(stateless, stateful http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sessionless(r) {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
}

// sessionless reports whether r is a request of MCP 2026-07-28 or later.
func sessionless(r *http.Request) bool {
	if r.Header.Get("Mcp-Session-Id") != "" {
		return false
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" {
		return v >= wire2026
	}
	if r.Method != http.MethodPost || r.Body == nil || r.Body == http.NoBody {
		return false
	}
	// bodyDeadline has read the body into memory, bounded: reading it
	// again costs no wait.
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return false
	}
	return metaVersion(body) >= wire2026
}

// metaVersion is the highest _meta protocol version of a JSON-RPC message
// or batch, "" when none carries one or body is not JSON.
func metaVersion(body []byte) string {
	type message struct {
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	var msgs []message
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		if json.Unmarshal(body, &msgs) != nil {
			return ""
		}
	} else {
		var m message
		if json.Unmarshal(body, &m) != nil {
			return ""
		}
		msgs = []message{m}
	}
	var top string
	for _, m := range msgs {
		var v string
		if json.Unmarshal(m.Params.Meta["io.modelcontextprotocol/protocolVersion"], &v) == nil && v > top {
			top = v
		}
	}
	return top
}
