package upstream_test

import (
	"strings"
	"testing"

	"github.com/toolsift/toolsift/upstream"
)

// FuzzQualifiedName: any server and tool names give a valid function name,
// the server part ends at the first "__", the same names give the same
// result, and two tools of one server get distinct names.
func FuzzQualifiedName(f *testing.F) {
	for _, s := range [][3]string{
		{"github", "create_issue", "create-issue"}, {"a.b", "t", "t."}, {"x__y", "__t", "_t"},
		{"", "", "_"}, {"ü", "ü", "ö"}, {strings.Repeat("long", 20), strings.Repeat("t", 80), strings.Repeat("t", 81)},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, server, tool1, tool2 string) {
		q1 := upstream.QualifiedName(server, tool1)
		if !validName.MatchString(q1) {
			t.Fatalf("QualifiedName(%q, %q) = %q: not a valid function name", server, tool1, q1)
		}
		prefix, _, ok := strings.Cut(q1, "__")
		if !ok || prefix == "" || strings.HasSuffix(prefix, "_") {
			t.Fatalf("QualifiedName(%q, %q) = %q: no server part before the first __", server, tool1, q1)
		}
		if again := upstream.QualifiedName(server, tool1); again != q1 {
			t.Fatalf("not deterministic: %q then %q", q1, again)
		}
		q2 := upstream.QualifiedName(server, tool2)
		if p2, _, _ := strings.Cut(q2, "__"); p2 != prefix {
			t.Fatalf("one server, two prefixes: %q and %q", q1, q2)
		}
		if tool1 != tool2 && q1 == q2 {
			t.Fatalf("tools %q and %q of server %q both get %q", tool1, tool2, server, q1)
		}
	})
}
