package oauth

import (
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Servers on the 2025-03-26 authorization spec publish no protected
// resource metadata: the MCP server's origin is its authorization server,
// whose metadata (RFC 8414) is at that origin, and without metadata its
// endpoints are /authorize, /token and /register there
// (https://modelcontextprotocol.io/specification/2025-03-26/basic/authorization#server-metadata-discovery).
// Login falls back to that, as the go-sdk's client does, when a server
// that asks for authorization publishes no resource metadata.

// legacyResourceMetadata is what a 2025-03-26 server's missing protected
// resource metadata would say: its origin as authorization server, itself
// as resource. nil when serverURL is not an absolute http(s) URL.
func legacyResourceMetadata(serverURL string) *oauthex.ProtectedResourceMetadata {
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil
	}
	origin := &url.URL{Scheme: u.Scheme, Host: u.Host}
	return &oauthex.ProtectedResourceMetadata{AuthorizationServers: []string{origin.String()}, Resource: serverURL}
}

// legacyAuthServerMetadata is the 2025-03-26 default endpoints of the
// authorization server at origin, which publishes no metadata.
func legacyAuthServerMetadata(origin string) *oauthex.AuthServerMeta {
	return &oauthex.AuthServerMeta{
		Issuer:                        origin,
		AuthorizationEndpoint:         origin + "/authorize",
		TokenEndpoint:                 origin + "/token",
		RegistrationEndpoint:          origin + "/register",
		CodeChallengeMethodsSupported: []string{"S256"},
	}
}
