package upstream

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Authorizer gives url servers the access tokens they ask for (MCP
// authorization, OAuth 2.1): HubOptions.Auth. oauth.Store is one, from the
// logins toolbench login stores; an application with its own tokens
// implements it in a few lines.
//
// The Hub calls it for every request to a url server whose config sets no
// Authorization header, and sends the token only to that server's origin
// (scheme, host and port of its URL), never to where a redirect leads.
// Methods are called concurrently, for several servers at once; they must
// not wait for a person (open a browser and wait): a server that needs a
// login should fail at once with an error that says how to log in.
type Authorizer interface {
	// Token returns the access token for the server named server at
	// serverURL; "" sends none. An error fails the request with it.
	Token(ctx context.Context, server, serverURL string) (string, error)

	// Unauthorized is told the server's answer to a request that carried
	// Token's token (or none): HTTP 401, or 403 with error
	// "insufficient_scope" in its WWW-Authenticate header. Returning nil
	// means Token now returns a new token: the request is sent again, once.
	// An error fails the request with it. It must not close resp's body.
	Unauthorized(ctx context.Context, server, serverURL string, resp *http.Response) error
}

// codeRejected is the code of the go-sdk's "rejected by transport" error: a
// request that got no answer from the server (an HTTP error, a login that
// is needed), which a call reports as an error, not as the server's answer.
const codeRejected = -32005

// authTransport puts the Authorizer's token on requests to one server.
type authTransport struct {
	base      http.RoundTripper
	auth      Authorizer
	server    string
	serverURL string
	origin    string
}

func newAuthTransport(base http.RoundTripper, auth Authorizer, server, serverURL string) *authTransport {
	return &authTransport{base: base, auth: auth, server: server, serverURL: serverURL, origin: origin(serverURL)}
}

func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Scheme + "://" + u.Host)
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.origin == "" || origin(req.URL.String()) != t.origin {
		return t.base.RoundTrip(req)
	}
	ctx := req.Context()
	send := func(req *http.Request) (*http.Response, error) {
		tok, err := t.auth.Token(ctx, t.server, t.serverURL)
		if err != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, err
		}
		r := req.Clone(ctx)
		if tok != "" {
			r.Header.Set("Authorization", "Bearer "+tok)
		}
		return t.base.RoundTrip(r)
	}
	resp, err := send(req)
	if err != nil || !askAuth(resp) {
		return resp, err
	}
	uerr := t.auth.Unauthorized(ctx, t.server, t.serverURL, resp)
	if uerr == nil && (req.Body == nil || req.GetBody != nil) {
		retry := req
		if req.Body != nil {
			body, err := req.GetBody()
			if err != nil {
				return resp, nil
			}
			retry = req.Clone(ctx)
			retry.Body = body
		}
		discard(resp)
		resp, err = send(retry)
		if err != nil || !askAuth(resp) {
			return resp, err
		}
		// Once only: a second refusal is the Authorizer's to explain.
		uerr = t.auth.Unauthorized(ctx, t.server, t.serverURL, resp)
	}
	if uerr != nil {
		discard(resp)
		recordAuth(ctx, uerr)
		return nil, uerr
	}
	return resp, nil
}

// askAuth reports whether resp asks for (other) authorization.
func askAuth(resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		return true
	case http.StatusForbidden:
		return strings.Contains(strings.Join(resp.Header.Values("WWW-Authenticate"), ","), "insufficient_scope")
	}
	return false
}

// discard drains a little of resp's body, so that its connection can be
// reused, and closes it.
func discard(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
}
