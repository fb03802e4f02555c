package upstream_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/tool"
)

func TestCallRendersContent(t *testing.T) {
	checkGoroutines(t)
	png := []byte(strings.Repeat("\x89PNG", 100)) // 400 bytes
	size := int64(2048)
	results := map[string]*mcp.CallToolResult{
		"texts":   {Content: []mcp.Content{&mcp.TextContent{Text: "first"}, &mcp.TextContent{Text: "second"}}},
		"image":   {Content: []mcp.Content{&mcp.TextContent{Text: "a chart:"}, &mcp.ImageContent{Data: png, MIMEType: "image/png"}}},
		"audio":   {Content: []mcp.Content{&mcp.AudioContent{Data: []byte("RIFF...."), MIMEType: "audio/wav"}}},
		"link":    {Content: []mcp.Content{&mcp.ResourceLink{URI: "file:///tmp/report.pdf", Name: "report.pdf", MIMEType: "application/pdf", Size: &size}}},
		"blob":    {Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://blob", MIMEType: "application/zip", Blob: png}}}},
		"textres": {Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://notes", MIMEType: "text/plain", Text: "remember the milk"}}}},
		"structured": {
			Content:           []mcp.Content{&mcp.TextContent{Text: `{"temp": 21, "city": "Oslo"}`}},
			StructuredContent: map[string]any{"city": "Oslo", "temp": 21},
		},
		"structured-only": {Content: []mcp.Content{}, StructuredContent: map[string]any{"ok": true}},
		"failed":          {IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "file not found"}}},
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "r", Version: "1"}, nil)
	for name, res := range results {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return res, nil })
	}
	hub := startHub(t, &config.Config{Servers: map[string]config.Server{"r": memServer(srv)}}, nil, nil)

	tests := []struct {
		tool string
		want tool.Result
	}{
		{"texts", tool.Result{Content: "first\nsecond"}},
		{"image", tool.Result{Content: "a chart:\n[image: image/png, 400 bytes]"}},
		{"audio", tool.Result{Content: "[audio: audio/wav, 8 bytes]"}},
		{"link", tool.Result{Content: "[resource link: file:///tmp/report.pdf, name report.pdf, application/pdf, 2048 bytes]"}},
		{"blob", tool.Result{Content: "[resource: mem://blob, application/zip, 400 bytes]"}},
		{"textres", tool.Result{Content: "[resource: mem://notes, text/plain, 17 bytes]\nremember the milk"}},
		{"structured", tool.Result{Content: `{"temp": 21, "city": "Oslo"}`, Structured: json.RawMessage(`{"city":"Oslo","temp":21}`)}},
		{"structured-only", tool.Result{Content: `{"ok":true}`, Structured: json.RawMessage(`{"ok":true}`)}},
		{"failed", tool.Result{Content: "file not found", IsError: true}},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			got, err := hub.Call(context.Background(), "r__"+tt.tool, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, ignoreRaw); diff != "" {
				t.Errorf("Call (-want +got):\n%s", diff)
			}
			if b64 := base64.StdEncoding.EncodeToString(png)[:40]; strings.Contains(got.Content, b64) {
				t.Errorf("rendered content holds base64 data: %q", got.Content)
			}
		})
	}
}
