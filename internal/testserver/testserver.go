// Package testserver is a small MCP server over stdio for tests (of upstream,
// cmd/toolbench and the root package), run by the test binary itself (the
// helper-process idiom): [Command] returns a link named testserver to the
// running test binary, and the test binary's TestMain calls [Serve] first,
// which serves when the process was started under that name. Nothing is
// built, so a test starting a server costs no `go build`.
//
//	func TestMain(m *testing.M) {
//		testserver.Serve()
//		os.Exit(m.Run())
//	}
//
// Its -mode flag makes it misbehave the ways real servers do.
//
//	-mode serve  (default) serve the tools below
//	-mode hang   read stdin, never answer, ignore EOF
//	-mode exit   print an error on stderr and exit 1 at once
//	-mode badschemas  list tools whose input schemas are not object
//	             schemas (the SDK's server would refuse to serve them)
//	-mode deep   list "good" and "deep", whose input schema nests -depth
//	             levels of properties (2 levels of JSON each); calling
//	             "deep_answer" answers with content nested as deep, and
//	             "good" first sends a notification nested as deep
//
// With -banner it first prints a line that is not JSON on stdout; with
// -noise, lines that look like JSON but are not JSON-RPC (pino logs,
// broken JSON), before and while serving.
//
// Beyond echo, where and crash, with -misbehave it serves log, wedge (stop reading stdin for
// good, as a blocked event loop does; later calls with large arguments
// cannot be written), block (never answer), and flood (write one stdout
// line of the given number of MiB, no newline).
// With -gate FILE, a start that finds FILE already there waits until it is
// removed before serving; the first start creates it. Tests use this to hold
// a restart while they look at the Hub.
package testserver

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// name is the program name under which a test binary is the test server.
const name = "testserver"

// Command returns the path of a command that runs the test server: a link
// named testserver, in a temporary folder of t, to the running test
// binary, whose TestMain must call [Serve] first.
func Command(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("testserver: the test binary's path: %v", err)
	}
	link := filepath.Join(t.TempDir(), name)
	if err := os.Symlink(exe, link); err != nil {
		t.Fatalf("testserver: %v", err)
	}
	return link
}

// Serve serves the test server and exits when the process was started
// through a [Command] link; otherwise it returns at once. Call it first in
// TestMain.
func Serve() {
	if filepath.Base(os.Args[0]) != name {
		return
	}
	serve(os.Args[1:])
	// Not os.Exit: a test binary built with -race sleeps a second in
	// os.Exit(0) (GORACE atexit_sleep_ms), which every Close of a Hub
	// would wait for. A race found here is still printed on stderr.
	syscall.Exit(0)
}

func serve(args []string) {
	flags := flag.NewFlagSet(name, flag.ExitOnError)
	mode := flags.String("mode", "serve", "serve, hang or exit")
	gate := flags.String("gate", "", "hold every start after the first until this file is removed")
	banner := flags.Bool("banner", false, "print a banner on stdout first, as some real servers do")
	misbehave := flags.Bool("misbehave", false, "also serve log, wedge, block and flood")
	noise := flags.Bool("noise", false, "print JSON-looking lines that are not JSON-RPC on stdout")
	depth := flags.Int("depth", 495, "-mode deep: levels of nesting")
	_ = flags.Parse(args)
	log.SetFlags(0)

	switch *mode {
	case "hang":
		fmt.Fprintln(os.Stderr, "testserver: hanging in initialize")
		_, _ = io.Copy(io.Discard, os.Stdin)
		forever() // ignore EOF too: only a signal stops us
	case "badschemas":
		badSchemas()
		return
	case "deep":
		deepServer(*depth)
		return
	case "exit":
		fmt.Fprintln(os.Stderr, "testserver: fatal: TESTSERVER_TOKEN is not set")
		os.Exit(1)
	}

	if *gate != "" {
		if _, err := os.Stat(*gate); err == nil {
			fmt.Fprintln(os.Stderr, "testserver: waiting for the gate")
			for {
				if _, err := os.Stat(*gate); os.IsNotExist(err) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		} else if err := os.WriteFile(*gate, nil, 0o644); err != nil {
			log.Fatal(err)
		}
	}

	if *banner {
		fmt.Println("Test MCP Server running on stdio")
	}
	if *noise {
		fmt.Println(`{"level":30,"time":1700000000000,"msg":"server starting"}`)
		fmt.Println(`{garbage`)
		fmt.Println(`[1, 2, 3]`)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "testserver", Version: "1.0.0"}, nil)
	type textArgs struct {
		Text string `json:"text" jsonschema:"the text to echo"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echo the text back."},
		func(_ context.Context, _ *mcp.CallToolRequest, in textArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "where", Description: "Report the working directory and $TESTSERVER_VALUE."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			wd, _ := os.Getwd()
			out, _ := json.Marshal(map[string]string{"cwd": wd, "value": os.Getenv("TESTSERVER_VALUE")})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "crash", Description: "Exit the server process."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "testserver: crashing on purpose")
			os.Exit(3)
			return nil, nil, nil
		})
	if *misbehave {
		mcp.AddTool(srv, &mcp.Tool{Name: "log", Description: "Print a JSON log line on stdout, then answer."},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				fmt.Println(`{"level":30,"msg":"hi"}`)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "logged"}}}, nil, nil
			})
		mcp.AddTool(srv, &mcp.Tool{Name: "wedge", Description: "Stop reading stdin."},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				stdin.wedge()
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wedged"}}}, nil, nil
			})
		mcp.AddTool(srv, &mcp.Tool{Name: "block", Description: "Never answer."},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				forever() // not even when cancelled
				return nil, nil, nil
			})
		type floodArgs struct {
			MiB int `json:"mib"`
		}
		mcp.AddTool(srv, &mcp.Tool{Name: "flood", Description: "Write one long stdout line without a newline."},
			func(_ context.Context, _ *mcp.CallToolRequest, in floodArgs) (*mcp.CallToolResult, any, error) {
				chunk := bytes.Repeat([]byte("x"), 1<<20)
				os.Stdout.Write([]byte(`{"jsonrpc":"2.0","method":"x","params":"`))
				for range in.MiB {
					if _, err := os.Stdout.Write(chunk); err != nil {
						os.Exit(4)
					}
				}
				forever()
				return nil, nil, nil
			})
	}
	if err := srv.Run(context.Background(), &mcp.IOTransport{Reader: stdin, Writer: nopCloser{os.Stdout}}); err != nil {
		log.Fatal(err)
	}
}

// stdin can stop being read, as a server whose event loop is blocked stops.
var stdin = &wedgeable{}

type wedgeable struct {
	mu     sync.Mutex
	wedged bool
}

func (w *wedgeable) wedge() {
	w.mu.Lock()
	w.wedged = true
	w.mu.Unlock()
}

func (w *wedgeable) Read(p []byte) (int, error) {
	w.mu.Lock()
	wedged := w.wedged
	w.mu.Unlock()
	if wedged {
		forever()
	}
	return os.Stdin.Read(p)
}

func (w *wedgeable) Close() error { return nil }

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// forever blocks for good. A bare select {} would not: when every goroutine
// is blocked on channels, the runtime ends the program as deadlocked.
func forever() {
	for {
		time.Sleep(time.Hour)
	}
}

// nested returns a schema with levels of nested properties, as text: a
// JSON encoder would refuse to write it.
func nested(levels int) json.RawMessage {
	open := `{"type":"object","properties":{"a":`
	var b bytes.Buffer
	b.Grow(levels * (len(open) + 2))
	for range levels {
		b.WriteString(open)
	}
	b.WriteString(`{"type":"string"}`)
	for range levels {
		b.WriteString("}}")
	}
	return b.Bytes()
}

// deepServer speaks just enough JSON-RPC to list a tool nested levels
// deep beside a good one, and to answer and notify as deeply. It writes
// the deep parts as text: encoding/json refuses JSON over 10,000 levels.
func deepServer(levels int) {
	deep := string(nested(levels))
	tools := `{"tools":[{"name":"good","description":"A flat tool.","inputSchema":{"type":"object"}},` +
		`{"name":"deep","description":"A deep tool.","inputSchema":` + deep + `},` +
		`{"name":"deep_answer","description":"Answers deeply.","inputSchema":{"type":"object"}}]}`
	serveRaw(func(method string, params json.RawMessage) string {
		switch method {
		case "tools/list":
			return tools
		case "tools/call":
			var p struct {
				Name string `json:"name"`
			}
			_ = json.Unmarshal(params, &p)
			switch p.Name {
			case "deep_answer":
				return `{"content":[{"type":"text","text":"deep"}],"structuredContent":{"x":` + deep + `}}`
			case "good":
				fmt.Println(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":` + deep + `}}`)
			}
			return `{"content":[{"type":"text","text":"ok"}]}`
		}
		return ""
	})
}

// serveRaw answers initialize itself and every other request with the
// JSON text answer returns ("": method not found), until stdin ends.
func serveRaw(answer func(method string, params json.RawMessage) string) {
	in := json.NewDecoder(os.Stdin)
	for {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := in.Decode(&req); err != nil {
			return
		}
		if req.ID == nil {
			continue // a notification
		}
		var result string
		if req.Method == "initialize" {
			var p struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			_ = json.Unmarshal(req.Params, &p)
			v, _ := json.Marshal(p.ProtocolVersion)
			result = `{"protocolVersion":` + string(v) + `,"capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}`
		} else {
			result = answer(req.Method, req.Params)
		}
		if result == "" {
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`+"\n", req.ID)
			continue
		}
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", req.ID, result)
	}
}

// badSchemas lists tools with input schemas the SDK's own server refuses,
// and answers calls of the good one.
func badSchemas() {
	tools := []map[string]any{
		{"name": "good", "inputSchema": map[string]any{"type": "object"}},
		{"name": "untyped", "inputSchema": map[string]any{"properties": map[string]any{"q": map[string]any{"type": "string"}}}},
		{"name": "number", "inputSchema": 42},
		{"name": "string", "inputSchema": "object"},
		{"name": "array", "inputSchema": []any{1, 2}},
		{"name": "typed_string", "inputSchema": map[string]any{"type": "string"}},
	}
	list, _ := json.Marshal(map[string]any{"tools": tools})
	serveRaw(func(method string, _ json.RawMessage) string {
		switch method {
		case "tools/list":
			return string(list)
		case "tools/call":
			return `{"content":[{"type":"text","text":"ok"}]}`
		}
		return ""
	})
}
