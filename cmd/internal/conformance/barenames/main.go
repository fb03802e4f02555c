// Command barenames stands between the MCP conformance suite and `toolsift
// serve --listen`, for .ci/conformance/run: the suite calls its
// everything-server's tools and prompts by their bare names
// ("test_simple_text") while toolsift lists them qualified by the server
// ("everything__test_simple_text", see upstream.QualifiedName). barenames adds
// the prefix to the names in the suite's requests (tools/call, prompts/get,
// a ref/prompt of completion/complete) and removes it from the names in
// toolsift's answers (tools/list, prompts/list), in JSON bodies and in
// server-sent events. Everything else passes through byte for byte: headers
// (session id, protocol version, Origin, Last-Event-ID), status codes,
// content, progress, logs and the streams' timing.
//
// It is a test harness, not part of toolsift: docs/conformance.md says why
// toolsift keeps its qualified names.
//
//	barenames -listen 127.0.0.1:PORT -target http://127.0.0.1:PORT2/mcp -server everything
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "`addr` to serve the suite on")
	target := flag.String("target", "", "toolsift serve's MCP `url`")
	server := flag.String("server", "everything", "the upstream server's `name` in toolsift's config")
	flag.Parse()
	u, err := url.Parse(*target)
	if err != nil || u.Host == "" {
		log.Fatalf("barenames: -target %q: want toolsift serve's URL, http://host:port/mcp", *target)
	}
	m := &mapper{prefix: *server + "__"}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.URL.Path = u.Path
			r.Out.Host = r.In.Host // the suite's Host and Origin checks are about toolsift
		},
		FlushInterval:  -1, // SSE: pass each event on at once
		ModifyResponse: m.response,
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = m.request(body)
			m.header(r.Header)
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			r.Header.Set("Content-Length", strconv.Itoa(len(body)))
		}
		rp.ServeHTTP(w, r)
	})
	fmt.Fprintf(os.Stderr, "barenames: http://%s/mcp -> %s\n", *listen, *target)
	log.Fatal(http.ListenAndServe(*listen, h))
}

type mapper struct{ prefix string }

// request adds the prefix to the names a message (or batch) of the suite
// uses; a body that is not JSON-RPC passes unchanged.
func (m *mapper) request(body []byte) []byte {
	return m.each(body, func(msg map[string]any) bool {
		params, _ := msg["params"].(map[string]any)
		if params == nil {
			return false
		}
		switch msg["method"] {
		case "tools/call", "prompts/get":
			return m.qualify(params, "name")
		case "completion/complete":
			if ref, _ := params["ref"].(map[string]any); ref != nil && ref["type"] == "ref/prompt" {
				return m.qualify(ref, "name")
			}
		}
		return false
	})
}

// header qualifies the Mcp-Name header of a 2026-07-28 tools/call or
// prompts/get, which names what the body names (SEP-2243): the body's name
// and the header's are qualified by the same rule, so a request whose two
// names differ still differs.
func (m *mapper) header(h http.Header) {
	switch h.Get("Mcp-Method") {
	case "tools/call", "prompts/get":
		if name := h.Get("Mcp-Name"); name != "" {
			obj := map[string]any{"name": name}
			if m.qualify(obj, "name") {
				h.Set("Mcp-Name", obj["name"].(string))
			}
		}
	}
}

func (m *mapper) qualify(obj map[string]any, key string) bool {
	name, _ := obj[key].(string)
	if name == "" || strings.Contains(name, "__") || name == "search_tools" || name == "call_tool" {
		return false
	}
	obj[key] = m.prefix + name
	return true
}

// response removes the prefix from listed names in a JSON answer or in each
// event of an SSE stream.
func (m *mapper) response(resp *http.Response) error {
	ct := resp.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "application/json"):
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		body = m.answer(body)
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	case strings.HasPrefix(ct, "text/event-stream"):
		pr, pw := io.Pipe()
		src := resp.Body
		go func() {
			defer src.Close()
			sc := bufio.NewScanner(src)
			sc.Buffer(make([]byte, 64<<10), 64<<20)
			for sc.Scan() {
				line := sc.Bytes()
				if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
					line = append([]byte("data: "), m.answer(bytes.TrimSpace(data))...)
				}
				if _, err := pw.Write(append(line, '\n')); err != nil {
					return
				}
			}
			pw.CloseWithError(sc.Err())
		}()
		resp.Body = pr
	}
	return nil
}

func (m *mapper) answer(body []byte) []byte {
	return m.each(body, func(msg map[string]any) bool {
		result, _ := msg["result"].(map[string]any)
		changed := false
		for _, key := range []string{"tools", "prompts"} {
			list, _ := result[key].([]any)
			for _, item := range list {
				if obj, _ := item.(map[string]any); obj != nil {
					if name, _ := obj["name"].(string); strings.HasPrefix(name, m.prefix) {
						obj["name"] = strings.TrimPrefix(name, m.prefix)
						changed = true
					}
				}
			}
		}
		return changed
	})
}

// each applies f to the message or to each message of a batch, and
// re-encodes the body when f changed one.
func (m *mapper) each(body []byte, f func(map[string]any) bool) []byte {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return body
	}
	var msgs []map[string]any
	batch := trimmed[0] == '['
	if batch {
		if decode(trimmed, &msgs) != nil {
			return body
		}
	} else {
		var one map[string]any
		if decode(trimmed, &one) != nil {
			return body
		}
		msgs = []map[string]any{one}
	}
	changed := false
	for _, msg := range msgs {
		if f(msg) {
			changed = true
		}
	}
	if !changed {
		return body
	}
	var out []byte
	var err error
	if batch {
		out, err = json.Marshal(msgs)
	} else {
		out, err = json.Marshal(msgs[0])
	}
	if err != nil {
		return body
	}
	return out
}

// decode keeps numbers (ids, progress tokens) as written.
func decode(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	return d.Decode(v)
}
