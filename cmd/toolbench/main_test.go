package main

import (
	"bytes"
	"context"
	"testing"
)

// runToolbench runs toolbench in-process with an empty environment and
// returns its exit code and output.
func runToolbench(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runWithEnv(t, nil, args...)
}

// runWithEnv runs toolbench in-process with the given environment.
func runWithEnv(t *testing.T, environ map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb, getenv: func(k string) string { return environ[k] }}
	code = run(context.Background(), e, args)
	return code, out.String(), errb.String()
}
