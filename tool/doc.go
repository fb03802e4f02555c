// Package tool is toolsift's shared vocabulary: a Tool as every package sees
// it, a Change to a server's tool list, and a call's Result and errors.
//
// It is a leaf: it imports nothing of toolsift and no third-party module, so
// every package (upstream, toolindex, budget, retrieval, agent) can speak it
// without pulling in the others' dependencies.
package tool
