package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/gateway/authn"
)

// HTTP sessions (streamable HTTP with sessions): the go-sdk keeps every
// session a client opens, with no cap, and serves a session to any request
// that names its id. sessionGuard stands in front of it:
//
//   - a session is bound to the credential that opened it (its user, or
//     a hash of the request's Authorization header): a request naming the
//     session with another credential is refused with 403, so that a
//     session id seen elsewhere is not the session;
//   - at most MaxSessions are open: a new one closes the session idle
//     longest (no request in flight), or is refused with 503 when every
//     session is busy; the SDK's SessionTimeout closes idle ones;
//   - session ids are never logged: the log names a session by tag, a
//     short hash of its id that cannot be turned back into it.

// DefaultMaxSessions is the default cap on open HTTP sessions. Each one
// costs a go-sdk server with the proxy's tools, resources and prompts
// (about 34 KB with a small catalog, more with many resources).
const DefaultMaxSessions = 100

// sessionTag is how the log names a session: 8 hex digits of its id's
// SHA-256, enough to tell a handful of sessions apart, useless to
// impersonate one.
func sessionTag(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:4])
}

// credential is what a session is bound to: the request's user, when it
// has an Identity (set by authn.Require or another middleware in
// front), so that a client whose JWT was refreshed, or who uses another of
// the user's tokens, keeps its session; else a hash of the request's
// Authorization header (empty without one).
func credential(r *http.Request) [32]byte {
	if id, ok := authn.IdentityFrom(r.Context()); ok && !id.IsZero() {
		return sha256.Sum256([]byte("identity\x00" + id.User))
	}
	return sha256.Sum256([]byte(r.Header.Get("Authorization")))
}

// sessionGuard binds, caps and forgets the sessions of a stateful
// streamable HTTP handler.
type sessionGuard struct {
	next http.Handler
	max  int
	log  *slog.Logger

	mu       sync.Mutex
	sessions map[string]*httpSession // by id
	opening  int                     // new-session requests not answered yet
}

// httpSession is one open session as the guard knows it.
type httpSession struct {
	cred     [32]byte
	srv      *mcp.Server // the session's own server
	lastUsed time.Time
	inFlight int // POSTs being answered
}

func newSessionGuard(next http.Handler, max int, log *slog.Logger) *sessionGuard {
	return &sessionGuard{next: next, max: max, log: log, sessions: map[string]*httpSession{}}
}

// live reports whether the session's server still has a session: the SDK
// closes it on DELETE, on its idle timeout, or when initialize failed.
func (hs *httpSession) live() bool {
	for range hs.srv.Sessions() {
		return true
	}
	return false
}

// close ends the session (the SDK forgets it too).
func (hs *httpSession) close() {
	for ss := range hs.srv.Sessions() {
		_ = ss.Close()
	}
}

func (g *sessionGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if id := r.Header.Get("Mcp-Session-Id"); id != "" {
		g.serveSession(w, r, id)
		return
	}
	if r.Method != http.MethodPost {
		g.next.ServeHTTP(w, r) // the SDK refuses it
		return
	}
	victim, err := g.reserve()
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		g.log.Warn("session refused", "reason", err.Error())
		return
	}
	if victim != nil {
		victim.close()
	}
	slot := &serverSlot{}
	rw := &sessionWriter{ResponseWriter: w, opened: func(id string) {
		g.mu.Lock()
		defer g.mu.Unlock()
		slot.once.Do(func() {}) // done by now: this orders the read of slot.srv after its write
		if slot.srv == nil {    // the SDK made no server: it cannot have a session
			return
		}
		g.sessions[id] = &httpSession{cred: credential(r), srv: slot.srv, lastUsed: time.Now()}
	}}
	defer func() {
		g.mu.Lock()
		g.opening--
		g.mu.Unlock()
	}()
	g.next.ServeHTTP(rw, withServerSlot(r, slot))
}

// reserve makes room for a new session: it forgets the sessions the SDK
// closed and, at the cap, picks the session idle longest with no request
// in flight to close (the caller closes it, without g.mu held). It fails
// when every session is busy.
func (g *sessionGuard) reserve() (victim *httpSession, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.sessions)+g.opening < g.max {
		g.opening++
		return nil, nil
	}
	var oldestID string
	for id, hs := range g.sessions {
		if !hs.live() {
			delete(g.sessions, id)
			continue
		}
		if hs.inFlight == 0 && (victim == nil || hs.lastUsed.Before(victim.lastUsed)) {
			victim, oldestID = hs, id
		}
	}
	if len(g.sessions)+g.opening < g.max {
		g.opening++
		return nil, nil
	}
	if victim == nil {
		return nil, fmt.Errorf("503 too many sessions: all %d sessions (gateway.HTTPOptions.MaxSessions, toolsift serve --max-sessions) are busy; retry later", g.max)
	}
	delete(g.sessions, oldestID)
	g.opening++
	g.log.Info("session closed: the session cap was reached and it was idle longest", "session", sessionTag(oldestID),
		"idle", time.Since(victim.lastUsed).Round(time.Second), "max_sessions", g.max)
	return victim, nil
}

// serveSession serves a request of an open session, from the credential
// that opened it only.
func (g *sessionGuard) serveSession(w http.ResponseWriter, r *http.Request, id string) {
	g.mu.Lock()
	hs := g.sessions[id]
	if hs != nil && !hs.live() {
		delete(g.sessions, id)
		hs = nil
	}
	if hs == nil {
		g.mu.Unlock()
		// What the SDK says of a session it does not have: the client
		// starts a new one (MCP transport: 404 ends a session).
		http.Error(w, "404 session not found: it ended (closed, idle too long, or over the session cap); start a new one", http.StatusNotFound)
		return
	}
	if hs.cred != credential(r) {
		g.mu.Unlock()
		g.log.Warn("session refused: another credential than the one that opened it", "session", sessionTag(id))
		http.Error(w, "403 forbidden: this session was opened with another credential", http.StatusForbidden)
		return
	}
	hs.lastUsed = time.Now()
	post := r.Method == http.MethodPost
	if post {
		hs.inFlight++
	}
	g.mu.Unlock()
	if post {
		defer func() {
			g.mu.Lock()
			hs.inFlight--
			hs.lastUsed = time.Now()
			g.mu.Unlock()
		}()
	}
	if r.Method == http.MethodDelete {
		defer func() {
			g.mu.Lock()
			delete(g.sessions, id)
			g.mu.Unlock()
		}()
	}
	g.next.ServeHTTP(w, r)
}

// sessionWriter calls opened with the session id the SDK gives a new
// session, before the answer that carries it leaves: the client may send
// its next request at once.
type sessionWriter struct {
	http.ResponseWriter
	opened func(id string)
	done   bool
}

func (w *sessionWriter) WriteHeader(code int) {
	w.note()
	w.ResponseWriter.WriteHeader(code)
}

func (w *sessionWriter) Write(b []byte) (int, error) {
	w.note()
	return w.ResponseWriter.Write(b)
}

func (w *sessionWriter) note() {
	if w.done {
		return
	}
	w.done = true
	if id := w.Header().Get("Mcp-Session-Id"); id != "" {
		w.opened(id)
	}
}

// Flush and Unwrap keep the SDK's event streams working through the
// wrapper (it flushes with http.ResponseController).
func (w *sessionWriter) Flush() {
	w.note()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *sessionWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
