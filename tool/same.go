package tool

import "reflect"

// Same reports whether a and b are the same tool in meaning: content hash
// (name, description and the input schema in canonical form), server,
// original name, title and annotations. The Hub uses it to tell whether a
// server's new list changed a tool, so that a schema re-serialised with
// its keys in another order (a cached list against the live one) is no
// change. The index stores bytes, so it also compares the schema byte for
// byte (see toolindex's upsert).
func Same(a, b Tool) bool {
	return a.Hash == b.Hash && a.Server == b.Server && a.OriginalName == b.OriginalName &&
		a.Title == b.Title && reflect.DeepEqual(a.Annotations, b.Annotations)
}
