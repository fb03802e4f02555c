//lint:file-ignore SA1019 logging is deprecated by MCP 2026-07-28 (SEP-2577), but servers and clients of the earlier revisions use it, and the Hub and proxy pass it on.

package upstream

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// LogMessage is one notifications/message a server sent: a log entry.
type LogMessage struct {
	// Level is the entry's syslog severity: "debug", "info", "notice",
	// "warning", "error", "critical", "alert" or "emergency".
	Level string
	// Logger names the server's logger, if it said.
	Logger string
	// Data is the entry as the server sent it (any JSON value, byte for
	// byte when the Hub read it off the wire).
	Data json.RawMessage
}

// logLevels are the MCP logging levels, least severe first.
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

type logKey struct{}

// WithLog returns a ctx whose Hub.Call, Hub.ReadResource or Hub.GetPrompt
// hands fn the log messages (notifications/message) its server sends
// while the request is in flight. MCP ties a log message to no request, so
// the Hub gives it to the only request in flight to that server, as it
// does for server→client requests (see ClientRequests); with several in
// flight, or none, it goes to no one (HubOptions.Logger at debug level).
// Like WithProgress's fn, fn is called one at a time, in order, for every
// message the server sent before its result, before the request returns,
// and never after; it must not block for long.
//
// Servers send log messages at the level HubOptions.ServerLogLevel asks
// of them (logging/setLevel), or none, some servers, until asked.
func WithLog(ctx context.Context, fn func(LogMessage)) context.Context {
	if fn == nil {
		return ctx
	}
	return context.WithValue(ctx, logKey{}, fn)
}

// loggedFor is a log message noted on the wire: what identifies it
// (key), its data as the server wrote it, and the request it was tied to
// then (nil for none).
type loggedFor struct {
	key  string
	data json.RawMessage
	r    *request
}

// maxNotedLogs bounds the log messages noted on the wire of one server and
// not yet handed over by the SDK.
const maxNotedLogs = 1024

// logKeyOf identifies a log message by its content, re-encoded (so that the
// params noted on the wire and those the SDK decodes give the same key).
func logKeyOf(level, logger string, data any) string {
	b, _ := json.Marshal(struct {
		L, N string
		D    any
	}{level, logger, data})
	return string(b)
}

// noteLog ties a log message server s wrote to the only request in flight
// to s, and counts it in that request's sink, before the SDK decodes it:
// onLog then hands it to that request, in the order s wrote.
func (h *Hub) noteLog(s *server, params json.RawMessage) {
	var p struct {
		Level  string          `json:"level"`
		Logger string          `json:"logger"`
		Data   json.RawMessage `json:"data"`
	}
	var data any
	if json.Unmarshal(params, &p) != nil || json.Unmarshal(p.Data, &data) != nil {
		return
	}
	key := logKeyOf(p.Level, p.Logger, data)
	h.pt.mu.Lock()
	var r *request
	if len(h.pt.inflight[s]) == 1 {
		for only := range h.pt.inflight[s] {
			r = only
		}
	}
	if h.pt.logs == nil {
		h.pt.logs = map[*server][]loggedFor{}
	}
	q := append(h.pt.logs[s], loggedFor{key: key, data: p.Data, r: r})
	if len(q) > maxNotedLogs {
		q = q[len(q)-maxNotedLogs:]
	}
	h.pt.logs[s] = q
	h.pt.mu.Unlock()
	if r != nil && r.sink != nil && r.sink.log != nil {
		r.sink.seen.Add(1)
	}
}

// onLog hands a log message the SDK decoded to the request noteLog tied it
// to (the first noted with the same content, those before it having been
// dropped by the SDK; else the oldest noted), or logs it at debug level
// when none.
func (h *Hub) onLog(s *server, p *mcp.LoggingMessageParams) {
	level := string(p.Level)
	key := logKeyOf(level, p.Logger, p.Data)
	h.pt.mu.Lock()
	var r *request
	var data json.RawMessage // as the server wrote it, when noted
	q := h.pt.logs[s]
	matched := false
	for i, l := range q {
		if l.key == key {
			r, data, q, matched = l.r, l.data, q[i+1:], true
			break
		}
	}
	if !matched && len(q) > 0 {
		// The SDK decoded it otherwise than the Hub did: it is still the
		// oldest noted, as the SDK hands notifications over in order.
		r, q = q[0].r, q[1:]
	}
	if len(q) == 0 {
		delete(h.pt.logs, s)
	} else {
		h.pt.logs[s] = q
	}
	h.pt.mu.Unlock()
	if data == nil {
		var err error
		if data, err = json.Marshal(p.Data); err != nil {
			data = json.RawMessage(fmt.Sprintf("%q", fmt.Sprint(p.Data)))
		}
	}
	if r == nil || r.sink == nil || r.sink.log == nil {
		h.opts.Logger.Debug("upstream: server log message for no request", "server", s.name, "level", level, "logger", p.Logger)
		return
	}
	k := r.sink
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.done {
		k.log(LogMessage{Level: level, Logger: p.Logger, Data: data})
	}
	k.hand()
}

// setLogLevel asks a server that declares logging for the log messages of
// HubOptions.ServerLogLevel and above; a server that refuses is logged,
// not failed.
func (h *Hub) setLogLevel(ctx context.Context, s *server, cs *mcp.ClientSession, init *mcp.InitializeResult) {
	level := h.opts.ServerLogLevel
	if level == "" || init == nil || init.Capabilities == nil || init.Capabilities.Logging == nil {
		return
	}
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: mcp.LoggingLevel(level)}); err != nil {
		h.opts.Logger.Info("upstream: server refused logging/setLevel", "server", s.name, "level", level, "error", err)
	}
}
