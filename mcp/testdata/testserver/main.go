// Command testserver is a small MCP server over stdio for the mcp package's
// tests. Its -mode flag makes it misbehave the ways real servers do.
//
//	-mode serve  (default) serve the tools below
//	-mode hang   read stdin, never answer, ignore EOF
//	-mode exit   print an error on stderr and exit 1 at once
//
// With -banner it first prints a line that is not JSON on stdout.
// With -gate FILE, a start that finds FILE already there waits until it is
// removed before serving; the first start creates it. Tests use this to hold
// a restart while they look at the Hub.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	mode := flag.String("mode", "serve", "serve, hang or exit")
	gate := flag.String("gate", "", "hold every start after the first until this file is removed")
	banner := flag.Bool("banner", false, "print a banner on stdout first, as some real servers do")
	flag.Parse()
	log.SetFlags(0)

	switch *mode {
	case "hang":
		fmt.Fprintln(os.Stderr, "testserver: hanging in initialize")
		_, _ = io.Copy(io.Discard, os.Stdin)
		select {} // ignore EOF too: only a signal stops us
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
	srv := sdk.NewServer(&sdk.Implementation{Name: "testserver", Version: "1.0.0"}, nil)
	type textArgs struct {
		Text string `json:"text" jsonschema:"the text to echo"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "echo", Description: "Echo the text back."},
		func(_ context.Context, _ *sdk.CallToolRequest, in textArgs) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Text}}}, nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "where", Description: "Report the working directory and $TESTSERVER_VALUE."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			wd, _ := os.Getwd()
			out, _ := json.Marshal(map[string]string{"cwd": wd, "value": os.Getenv("TESTSERVER_VALUE")})
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(out)}}}, nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "crash", Description: "Exit the server process."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "testserver: crashing on purpose")
			os.Exit(3)
			return nil, nil, nil
		})
	if err := srv.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
