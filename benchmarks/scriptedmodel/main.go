// Command scriptedmodel is a scripted OpenAI-compatible chat server for
// measuring toolsift end to end without a real model: its first answer
// calls one tool, its second answers with that tool's result. It prints its
// base URL on stdout and, on stderr, the Unix time in milliseconds of the
// first request it receives (for "time to the first model request").
//
//	go run ./benchmarks/scriptedmodel --call memory__read_graph --args '{}'
//
// benchmarks/lazystart.sh uses it with toolbench run on the real catalog.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/toolsift/toolsift/internal/agenttest"
	"github.com/toolsift/toolsift/tool"
)

func main() {
	call := flag.String("call", "", "qualified `name` of the tool the first answer calls (required)")
	args := flag.String("args", "{}", "the call's JSON `arguments`")
	flag.Parse()
	if *call == "" {
		flag.Usage()
		os.Exit(2)
	}
	var once sync.Once
	srv := agenttest.NewServerFunc(func(req agenttest.Request) agenttest.Reply {
		once.Do(func() { fmt.Fprintf(os.Stderr, "first request at %d\n", time.Now().UnixMilli()) })
		for _, m := range req.Messages {
			if m.Role == tool.RoleTool {
				return agenttest.Reply{Content: "Result: " + m.Content}
			}
		}
		return agenttest.Reply{ToolCalls: []tool.ToolCall{{Name: *call, Arguments: *args}}}
	})
	defer srv.Close()
	fmt.Println(srv.URL)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt)
	<-stop
}
