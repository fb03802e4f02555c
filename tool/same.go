package tool

import (
	"bytes"
	"reflect"
)

// Same reports whether a and b are the same tool in everything a consumer
// keeps of it: content hash, server, original name, title, input schema
// (byte for byte) and annotations. mcp uses it to tell whether a server's
// new list changed a tool, toolindex whether an upsert changes what it
// stores; one rule, so that a change the Hub reports is one the index
// stores.
func Same(a, b Tool) bool {
	return a.Hash == b.Hash && a.Server == b.Server && a.OriginalName == b.OriginalName &&
		a.Title == b.Title && bytes.Equal(a.InputSchema, b.InputSchema) &&
		reflect.DeepEqual(a.Annotations, b.Annotations)
}
