package mcp

// StartProcess is startProcess, for tests that warm up the starter
// goroutine before they count goroutines.
var StartProcess = startProcess
