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

// WithLog returns a ctx whose Hub.Call, Passthrough.ReadResource or
// Passthrough.GetPrompt hands fn the log messages (notifications/message) its server sends
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
func (p *inflight) noteLog(s *server, params json.RawMessage) {
	var m struct {
		Level  string          `json:"level"`
		Logger string          `json:"logger"`
		Data   json.RawMessage `json:"data"`
	}
	var data any
	if json.Unmarshal(params, &m) != nil || json.Unmarshal(m.Data, &data) != nil {
		return
	}
	key := logKeyOf(m.Level, m.Logger, data)
	p.mu.Lock()
	var r *request
	if len(p.byServer[s]) == 1 {
		for only := range p.byServer[s] {
			r = only
		}
	}
	if p.logs == nil {
		p.logs = map[*server][]loggedFor{}
	}
	q := append(p.logs[s], loggedFor{key: key, data: m.Data, r: r})
	if len(q) > maxNotedLogs {
		q = q[len(q)-maxNotedLogs:]
	}
	p.logs[s] = q
	p.mu.Unlock()
	if r != nil && r.sink != nil && r.sink.log != nil {
		r.sink.seen.Add(1)
	}
}

// onLog hands a log message the SDK decoded to the request noteLog tied it
// to (the first noted with the same content, those before it having been
// dropped by the SDK; else the oldest noted), or logs it at debug level
// when none.
func (p *inflight) onLog(s *server, m *mcp.LoggingMessageParams) {
	level := string(m.Level)
	key := logKeyOf(level, m.Logger, m.Data)
	p.mu.Lock()
	var r *request
	var data json.RawMessage // as the server wrote it, when noted
	q := p.logs[s]
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
		delete(p.logs, s)
	} else {
		p.logs[s] = q
	}
	p.mu.Unlock()
	if data == nil {
		var err error
		if data, err = json.Marshal(m.Data); err != nil {
			data = json.RawMessage(fmt.Sprintf("%q", fmt.Sprint(m.Data)))
		}
	}
	if r == nil || r.sink == nil || r.sink.log == nil {
		p.log.Debug("upstream: server log message for no request", "server", s.name, "level", level, "logger", m.Logger)
		return
	}
	k := r.sink
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.done {
		k.log(LogMessage{Level: level, Logger: m.Logger, Data: data})
	}
	k.hand()
}

// setLogLevel asks a server that declares logging for the log messages of
// HubOptions.ServerLogLevel and above; a server that refuses is logged,
// not failed.
func (s *server) setLogLevel(ctx context.Context, cs *mcp.ClientSession, init *mcp.InitializeResult) {
	h := s.h
	level := h.opts.ServerLogLevel
	if level == "" || init == nil || init.Capabilities == nil || init.Capabilities.Logging == nil {
		return
	}
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: mcp.LoggingLevel(level)}); err != nil {
		h.opts.Logger.Info("upstream: server refused logging/setLevel", "server", s.name, "level", level, "error", err)
	}
}
