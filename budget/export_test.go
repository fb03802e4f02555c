package budget

import (
	"encoding/json"

	"github.com/toolsift/toolsift/tool"
)

// Encode exposes the token ids for golden tests.
func (t *Tokenizer) Encode(s string) []int { return t.encode(s) }

// Compress renders a tool at a tier without counting it, for the tests
// that check every schema of the catalog (tokenizing 1.2M tokens four times
// would take minutes with -race).
func Compress(tool tool.Tool, tier Tier) (string, json.RawMessage, error) {
	return compress(tool, tier)
}

// SetExactTruncateLimit lowers the size above which Truncate estimates,
// for a test; it returns a function that restores it.
func SetExactTruncateLimit(n int) (restore func()) {
	old := exactTruncateLimit
	exactTruncateLimit = n
	return func() { exactTruncateLimit = old }
}

// Quality is quality, for the brute-force oracle of the Select tests.
func (t Tier) Quality() float64 { return t.quality() }

// SetSmallPiece sets the piece length up to which tiktoken's own merge loop
// is used (0: every piece goes through the heap merge), for a test; it
// returns a function that restores it.
func SetSmallPiece(n int) (restore func()) {
	old := smallPiece
	smallPiece = min(n, maxSmallPiece)
	return func() { smallPiece = old }
}

// ParseFormat is parseFormat, for the test that every Format's name parses
// back to it.
var ParseFormat = parseFormat
