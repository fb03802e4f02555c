package oauth_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/oauth"
)

func TestCheckBrowserURL(t *testing.T) {
	for _, u := range []string{
		"https://auth.example.com/authorize?x=1",
		"HTTPS://auth.example.com/a",
		"http://127.0.0.1:8080/authorize",
		"http://127.5.0.1/authorize",
		"http://[::1]:9000/authorize",
		"http://localhost/authorize",
	} {
		if err := oauth.CheckBrowserURL(u); err != nil {
			t.Errorf("CheckBrowserURL(%q) = %v, want nil", u, err)
		}
	}
	for u, want := range map[string]string{
		"file://localhost/etc/passwd":  `scheme "file"`,
		"smb://127.0.0.1/share/x.exe":  `scheme "smb"`,
		"ms-msdt://localhost/id":       `scheme "ms-msdt"`,
		"ssh://localhost/":             `scheme "ssh"`,
		"javascript:alert(1)":          `scheme "javascript"`,
		"/authorize":                   `scheme ""`,
		"https:///nohost":              `scheme "https"`,
		"http://example.com/authorize": "not loopback",
		"http://127.0.0.1.evil.com/a":  "not loopback",
		"http://localhost.evil.com/a":  "not loopback",
	} {
		err := oauth.CheckBrowserURL(u)
		if !errors.Is(err, oauth.ErrUnsafeURL) || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckBrowserURL(%q) = %v, want ErrUnsafeURL saying %q", u, err, want)
		}
	}
}
