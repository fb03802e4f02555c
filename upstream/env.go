package upstream

import (
	"maps"
	"path"
	"runtime"
	"slices"
	"strings"

	"github.com/toolsift/toolsift/config"
)

// defaultEnv lists the variables of the Hub's environment that every stdio
// server gets, as Claude Desktop and the MCP TypeScript SDK do: enough to
// find programs, a home and a locale, and nothing that is usually a secret.
var defaultEnv = map[bool][]string{
	false: {"HOME", "LANG", "LC_ALL", "LC_CTYPE", "LOGNAME", "PATH", "SHELL", "TERM", "TMPDIR", "TZ", "USER"},
	true: {"APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PROCESSOR_ARCHITECTURE",
		"PROGRAMFILES", "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "USERNAME", "USERPROFILE"},
}

// environ returns the environment of sc's child process, given the Hub's
// (os.Environ()): the default set and the InheritEnv matches from parent,
// in parent's order, then Env, sorted by name. Env wins over parent.
func environ(sc config.Server, parent []string) []string {
	return environFor(sc, runtime.GOOS == "windows", parent)
}

// environFor is environ for Windows rules (names ignore case) or the others.
func environFor(sc config.Server, windows bool, parent []string) []string {
	norm := func(s string) string { return s }
	if windows {
		norm = strings.ToUpper
	}
	set := map[string]bool{}
	for k := range sc.Env {
		set[norm(k)] = true
	}
	inherit := func(name string) bool {
		n := norm(name)
		if slices.Contains(defaultEnv[windows], n) {
			return true
		}
		for _, p := range sc.InheritEnv {
			if p == "*" {
				return true
			}
			if ok, _ := path.Match(norm(p), n); ok {
				return true
			}
		}
		return false
	}
	env := []string{}
	for _, kv := range parent {
		name, _, ok := strings.Cut(kv, "=")
		// Windows keeps per-drive folders in "=C:=C:\dir": not inherited.
		if !ok || name == "" || set[norm(name)] || !inherit(name) {
			continue
		}
		env = append(env, kv)
	}
	for _, k := range slices.Sorted(maps.Keys(sc.Env)) {
		env = append(env, k+"="+sc.Env[k])
	}
	return env
}
