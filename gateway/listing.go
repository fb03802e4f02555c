package gateway

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/tool"
)

// maxListings bounds the listings a proxy keeps; past it they are made
// anew (the working set of a busy proxy is the tools its sessions list).
const maxListings = 1 << 14

// listings keeps, per tool name, what sdkTool made of the tool's current
// definition and that listing as JSON (a session's defs): a search lists up
// to five tools on its session and a tools/list checks every listed tool,
// and making a listing decodes and encodes its schema. An entry is reused
// only while every field sdkTool reads is the same (a content hash is not
// enough: it leaves out the title, annotations and output schema, and keys'
// order), so what is listed stays byte for byte what sdkTool makes.
type listings struct {
	mu sync.Mutex
	m  map[string]*listing
}

type listing struct {
	src tool.Tool
	st  *mcp.Tool // nil: t cannot be listed
	def string
}

// get returns sdkTool(t), a copy for the caller to list, and its JSON;
// ok is false when t cannot be listed.
func (l *listings) get(t tool.Tool) (st *mcp.Tool, def string, ok bool) {
	l.mu.Lock()
	e := l.m[t.Name]
	l.mu.Unlock()
	if e == nil || !sameListing(e.src, t) {
		e = &listing{src: t}
		if st, ok := sdkTool(t); ok {
			b, _ := json.Marshal(st)
			e.st, e.def = st, string(b)
		}
		l.mu.Lock()
		if l.m == nil || len(l.m) >= maxListings {
			l.m = map[string]*listing{}
		}
		l.m[t.Name] = e
		l.mu.Unlock()
	}
	if e.st == nil {
		return nil, "", false
	}
	c := *e.st // the SDK keeps what it is given: each session its own
	return &c, e.def, true
}

// sameListing reports whether sdkTool makes the same listing of a and b:
// every field it reads is equal.
func sameListing(a, b tool.Tool) bool {
	return a.Name == b.Name && a.Title == b.Title && a.Description == b.Description &&
		bytes.Equal(a.InputSchema, b.InputSchema) && bytes.Equal(a.OutputSchema, b.OutputSchema) &&
		sameAnnotations(a.Annotations, b.Annotations)
}

func sameAnnotations(a, b *tool.Annotations) bool {
	if a == nil || b == nil {
		return a == b
	}
	same := func(x, y *bool) bool { return x == nil && y == nil || x != nil && y != nil && *x == *y }
	return a.Title == b.Title && same(a.ReadOnlyHint, b.ReadOnlyHint) && same(a.DestructiveHint, b.DestructiveHint) &&
		same(a.IdempotentHint, b.IdempotentHint) && same(a.OpenWorldHint, b.OpenWorldHint)
}
