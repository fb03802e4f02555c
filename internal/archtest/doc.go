// Package archtest holds docs/ARCHITECTURE.md to the code. Its tests
// compare the package table's "imports (ours)" column with what `go list`
// says each package imports, failing with the row and what to write in it;
// hold the packages under internal/ to the floor the file names (they
// import only its packages, which import only each other); and check that
// the ranking packages (toolindex, retrieval, budget, think) compile no
// HTTP SDK and that upstream and budget compile neither chromem-go nor
// openai-go. The package has no code outside its tests.
package archtest
