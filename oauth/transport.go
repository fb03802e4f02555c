package oauth

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// formParam adds a parameter to the form body of every POST it carries
// that lacks it: the resource of a refresh request, which x/oauth2 does not
// send.
type formParam struct {
	base       http.RoundTripper
	key, value string
}

func (t *formParam) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.Body == nil || t.value == "" {
		return t.base.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	if form, err := url.ParseQuery(string(body)); err == nil && !form.Has(t.key) {
		form.Set(t.key, t.value)
		body = []byte(form.Encode())
	}
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	r.ContentLength = int64(len(body))
	r.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return t.base.RoundTrip(r)
}

func transportOf(c *http.Client) http.RoundTripper {
	if c != nil && c.Transport != nil {
		return c.Transport
	}
	return http.DefaultTransport
}
