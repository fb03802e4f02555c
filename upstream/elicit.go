package upstream

import (
	"bytes"
	"encoding/json"
)

// elicitParams returns the params of an elicitation/create with its mode
// said: the SDK encodes an unset mode as "mode": "", which MCP does not
// define; as the SDK's own client does, it is "url" when the request has a
// URL or an elicitation id, else "form". Params it cannot read are
// returned unchanged.
func elicitParams(params json.RawMessage) json.RawMessage {
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil || p == nil {
		return params
	}
	var mode string
	if m, ok := p["mode"]; ok && json.Unmarshal(m, &mode) == nil && mode != "" {
		return params
	}
	mode = "form"
	if _, ok := p["url"]; ok {
		mode = "url"
	} else if _, ok := p["elicitationId"]; ok {
		mode = "url"
	}
	p["mode"], _ = json.Marshal(mode)
	out, err := json.Marshal(p)
	if err != nil {
		return params
	}
	return out
}

// elicitDefaults fills, in an accepted form elicitation's answer, the
// fields the client left out that the requested schema gives a default
// (SEP-1034, as the SDK's client does for its own handlers): a server
// gets the values the user was shown. The schema is flat (MCP allows only
// top-level properties). Anything it cannot read is returned unchanged.
func elicitDefaults(params, answer json.RawMessage) json.RawMessage {
	var req struct {
		Mode            string `json:"mode"`
		RequestedSchema struct {
			Properties map[string]struct {
				Default json.RawMessage `json:"default"`
			} `json:"properties"`
		} `json:"requestedSchema"`
	}
	if json.Unmarshal(params, &req) != nil || req.Mode == "url" {
		return answer
	}
	var res map[string]json.RawMessage
	if json.Unmarshal(answer, &res) != nil || res == nil {
		return answer
	}
	var action string
	if json.Unmarshal(res["action"], &action) != nil || action != "accept" {
		return answer
	}
	content := map[string]json.RawMessage{}
	if c, ok := res["content"]; ok && !bytes.Equal(bytes.TrimSpace(c), []byte("null")) {
		if json.Unmarshal(c, &content) != nil || content == nil {
			return answer
		}
	}
	filled := false
	for name, prop := range req.RequestedSchema.Properties {
		if _, ok := content[name]; ok || len(prop.Default) == 0 {
			continue
		}
		content[name] = prop.Default
		filled = true
	}
	if !filled {
		return answer
	}
	var err error
	if res["content"], err = json.Marshal(content); err != nil {
		return answer
	}
	out, err := json.Marshal(res)
	if err != nil {
		return answer
	}
	return out
}
