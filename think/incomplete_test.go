package think_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift/think"
)

func TestNewIncomplete(t *testing.T) {
	if in := think.NewIncomplete(nil, nil); in != nil {
		t.Errorf("NewIncomplete(nil, nil) = %+v, want nil: nothing missing", in)
	}
	for _, c := range []struct {
		connecting, failed []string
		note               string
	}{
		{[]string{"alpha"}, nil, "1 server is still connecting (alpha): its tools are not listed yet; search again in a few seconds to see them."},
		{[]string{"alpha", "beta"}, []string{"gamma"}, "2 servers are still connecting (alpha, beta): their tools are not listed yet; search again in a few seconds to see them. " +
			"1 server failed (gamma): its tools are not available."},
		{nil, []string{"gamma", "delta"}, "2 servers failed (gamma, delta): their tools are not available."},
	} {
		in := think.NewIncomplete(c.connecting, c.failed)
		want := &think.Incomplete{Connecting: c.connecting, Failed: c.failed, Note: c.note}
		if diff := cmp.Diff(want, in); diff != "" {
			t.Errorf("NewIncomplete(%q, %q) (-want +got):\n%s", c.connecting, c.failed, diff)
		}
	}
}

// TestNewIncompleteLogin: the servers whose tools join at the first login
// are named with their login pages, after the connecting and the failed.
func TestNewIncompleteLogin(t *testing.T) {
	if in := think.NewIncompleteLogin(nil, nil, nil); in != nil {
		t.Errorf("NewIncompleteLogin(nil, nil, nil) = %+v, want nil: nothing missing", in)
	}
	one := []think.Login{{Server: "mail", URL: "https://gw.example/login/mail"}}
	two := append(one, think.Login{Server: "tracker", URL: "https://gw.example/login/tracker"})
	for _, c := range []struct {
		failed []string
		login  []think.Login
		note   string
	}{
		{nil, one, "1 server lists its tools at the first login to it (mail): its tools are not listed until someone logs in; " +
			"log in at https://gw.example/login/mail to use them."},
		{[]string{"gamma"}, two, "1 server failed (gamma): its tools are not available. " +
			"2 servers list their tools at the first login to them (mail, tracker): their tools are not listed until someone logs in; " +
			"log in at https://gw.example/login/mail, https://gw.example/login/tracker to use them."},
	} {
		in := think.NewIncompleteLogin(nil, c.failed, c.login)
		want := &think.Incomplete{Failed: c.failed, Login: c.login, Note: c.note}
		if diff := cmp.Diff(want, in); diff != "" {
			t.Errorf("NewIncompleteLogin(nil, %q, %v) (-want +got):\n%s", c.failed, c.login, diff)
		}
	}
}

func TestIncompleteAddTo(t *testing.T) {
	in := think.NewIncomplete([]string{"alpha"}, nil)
	for _, c := range []struct{ answer, want string }{
		{`{"tools":[]}`, `{"tools":[],"incomplete":{"connecting":["alpha"],"note":"` + in.Note + `"}}`},
		{`{}`, `{"incomplete":{"connecting":["alpha"],"note":"` + in.Note + `"}}`},
		{`not json`, `not json`},
	} {
		got := in.AddTo(c.answer)
		if got != c.want {
			t.Errorf("AddTo(%s) = %s, want %s", c.answer, got, c.want)
		}
		if c.answer != "not json" && !json.Valid([]byte(got)) {
			t.Errorf("AddTo(%s) = %s: not JSON", c.answer, got)
		}
	}
	var none *think.Incomplete
	if got := none.AddTo(`{"tools":[]}`); got != `{"tools":[]}` {
		t.Errorf("nil AddTo = %s, want the answer unchanged", got)
	}
}
