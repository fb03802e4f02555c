package config

import "testing"

// TestSuggest: the field an alias another client uses stands for; else
// the known field a misspelling is nearest to, within 1 + len/5 edits (a
// swap of neighbours is one), case, '_' and '-' aside; else none.
func TestSuggest(t *testing.T) {
	for _, tt := range []struct{ key, want string }{
		{"comand", "command"},
		{"commnad", "command"}, // a swap
		{"comnd", "command"},   // two edits: within 1 + 7/5
		{"cmnd", ""},           // three
		{"Command", "command"}, // case
		{"allowed-tools", "allowedTools"},
		{"alowedTool", "allowedTools"}, // two edits of twelve letters
		{"disabledtool", "disabledTools"},
		{"alwaysLoadTool", "alwaysLoadTools"},
		{"alwaysload", "alwaysLoad"},
		{"ulr", "url"},
		{"uri", "url"},
		{"urls", "url"},
		{"u", ""}, // nearer to nothing than its own length
		{"envfile", "envFile"},
		{"enviroment", ""},     // far from "env"; not an alias either
		{"environment", "env"}, // an alias
		{"cmd", "command"},     // an alias, though "cwd" is one edit away
		{"serverUrl", "url"},
		{"httpUrl", "url"},
		{"excludeTools", "disabledTools"},
		{"color", ""},
		{"", ""},
	} {
		if got := suggest(tt.key, serverFields); got != tt.want {
			t.Errorf("suggest(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"command", "command", 0},
		{"comand", "command", 1}, {"commnad", "command", 1}, {"ca", "ac", 1},
		{"kitten", "sitting", 3}, {"abc", "ca", 3},
	} {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := editDistance(tt.b, tt.a); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.b, tt.a, got, tt.want)
		}
	}
}
