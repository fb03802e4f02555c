package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ObjectArgs returns a call's arguments as the JSON object to send: white
// space trimmed, and empty or null arguments as {}. Anything else that is
// not a JSON object is an error wrapping ErrInvalidArguments that says what
// it is instead. It is the one rule for arguments: the agent applies it to
// what the model wrote, upstream.Hub.Call to what its caller passes.
func ObjectArgs(args json.RawMessage) (json.RawMessage, error) {
	b := bytes.TrimSpace(args)
	switch {
	case len(b) == 0 || bytes.Equal(b, []byte("null")):
		return json.RawMessage("{}"), nil
	case !json.Valid(b):
		var v any
		err := json.Unmarshal(b, &v)
		return nil, fmt.Errorf("%w: not valid JSON (%v)", ErrInvalidArguments, err)
	case b[0] != '{':
		return nil, fmt.Errorf("%w: got %.40s", ErrInvalidArguments, b)
	}
	return json.RawMessage(b), nil
}
