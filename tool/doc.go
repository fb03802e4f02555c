// Package tool is toolsift's shared vocabulary: a Tool as every package sees
// it, a Change to a server's tool list, a call's Result and errors, and a
// conversation's Message (with its ToolCalls), the one type the agent, its
// models, the conversation → query rule and toolsift's Select speak.
//
// It is a leaf: it imports nothing of toolsift and no third-party module, so
// every package (upstream, toolindex, budget, retrieval, agent) can speak it
// without pulling in the others' dependencies.
package tool
