package config

import (
	"fmt"
	"strconv"
	"strings"
)

// OAuth is how a login identifies this client to a url server's
// authorization server (MCP authorization); the Hub itself does not read
// it. In files it is the server's "oauth" object (docs/config.md). Nothing
// here is needed for dynamic client registration, the usual case.
type OAuth struct {
	// ClientID and ClientSecret: a client registered beforehand. The secret
	// is a secret: give it as ${env:NAME} or ${input:ID}.
	ClientID     string
	ClientSecret string
	// ClientMetadataURL is the HTTPS URL of a client ID metadata document,
	// used as the client ID where the authorization server accepts them.
	ClientMetadataURL string
	// Scopes are asked for besides those the server names.
	Scopes []string
	// CallbackPort is the loopback port of the redirect; 0 picks a free
	// one.
	CallbackPort int
}

// parseOAuth reads a server's "oauth" object into sc.OAuth.
func (p *parser) parseOAuth(v *jval, sctx string, st *serverState, sc *Server) error {
	ctx := sctx + `: field "oauth"`
	if v.kind != jObject {
		return p.errorf(v.off, ctx, "want an object, got %s", v.kind)
	}
	if err := p.unique(v, ctx, "field"); err != nil {
		return err
	}
	o := &OAuth{}
	for _, m := range v.members {
		fctx := fmt.Sprintf("%s: %q", ctx, m.key)
		if m.val.kind == jNull {
			continue
		}
		str := func(dst *string) error {
			if m.val.kind != jString {
				return p.errorf(m.val.off, fctx, "want a string, got %s", m.val.kind)
			}
			*dst = p.expand(m.val.str, m.val.off, fctx, st)
			return nil
		}
		var err error
		switch m.key {
		case "clientId":
			err = str(&o.ClientID)
		case "clientSecret":
			err = str(&o.ClientSecret)
		case "clientMetadataUrl":
			err = str(&o.ClientMetadataURL)
		case "scopes":
			// A list, or one string of space-separated scopes as in OAuth.
			if m.val.kind == jString {
				o.Scopes = strings.Fields(m.val.str)
			} else {
				o.Scopes, err = p.strings(m.val, fctx)
			}
		case "callbackPort":
			n, cerr := strconv.Atoi(m.val.str)
			if m.val.kind != jNumber || cerr != nil || n < 0 || n > 65535 {
				err = p.errorf(m.val.off, fctx, "want a port number (0 to 65535)")
			}
			o.CallbackPort = n
		default:
			p.warn(m.off, ctx, "unknown field %q ignored%s", m.key, didYouMean(m.key, oauthFields))
		}
		if err != nil {
			return err
		}
	}
	if o.ClientSecret != "" && o.ClientID == "" {
		return p.errorf(v.off, ctx, `"clientSecret" needs "clientId"`)
	}
	sc.OAuth = o
	return nil
}
