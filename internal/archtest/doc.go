// Package archtest holds docs/ARCHITECTURE.md's package table to the code:
// its test compares the table's "imports (ours)" column with what
// `go list` says each package imports, and fails naming the row and what
// to write in it. The package has no code outside its test.
package archtest
