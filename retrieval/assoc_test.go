package retrieval_test

import (
	"context"
	"github.com/toolsift/toolsift/internal/rankopt"
	"slices"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/tool"
)

// The embedded table reads, expands a request by the words its words call
// for (none that the request has already), and says which line is wrong.
func TestAssocExpansion(t *testing.T) {
	text, w, ok := retrieval.AssocPart("play that song again", 0.25)
	if !ok {
		t.Fatal("no expansion for \"play that song again\"")
	}
	words := strings.Fields(text)
	if !slices.Contains(words, "music") {
		t.Errorf("expansion %q lacks music", text)
	}
	if slices.Contains(words, "song") || slices.Contains(words, "play") {
		t.Errorf("expansion %q repeats the request's words", text)
	}
	if w != 0.25 {
		t.Errorf("weight %v, want 0.25 (of the request's 1)", w)
	}
	if _, _, ok := retrieval.AssocPart("zzqx qqzx", 0.25); ok {
		t.Error("expanded words the table does not have")
	}
	if _, err := retrieval.ParseAssoc("# c\nsong\tmusic:0.7\nbad line\n"); err == nil || !strings.Contains(err.Error(), "assoc.tsv:3") {
		t.Errorf("bad line: err = %v, want one naming assoc.tsv:3", err)
	}
	if _, err := retrieval.ParseAssoc("song\tmusic:x\n"); err == nil || !strings.Contains(err.Error(), `"music:x"`) {
		t.Errorf("bad weight: err = %v", err)
	}
	if n, err := retrieval.ParseAssoc("song\tmusic:0.7 genre:0.25\n"); err != nil || n != 1 {
		t.Errorf("good table: %d terms, %v", n, err)
	}
}

// With Associate a request finds a tool that shares none of its words
// but the words the table associates with them; without it, BM25F alone
// cannot.
func TestAssociateFindsToolByAssociatedWords(t *testing.T) {
	tools := []tool.Tool{
		{Name: "start_music", Description: "Start the music in the living room."},
		{Name: "create_invoice", Description: "Create an invoice for a customer."},
		{Name: "list_files", Description: "List the files of a folder."},
	}
	for i := range tools {
		tools[i] = tools[i].WithHash()
	}
	ix := testenv.Index(t, nil, nil, tools...)
	q := retrieval.Query{Task: "play that song again"}
	plain := newRetriever(t, ix, &retrieval.Options{K: 3, Mode: retrieval.Lexical})
	ms, err := plain.Retrieve(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(names(ms), "start_music") {
		t.Fatalf("BM25F alone found start_music: %q; the test needs a request without its words", names(ms))
	}
	assoc := newRetriever(t, ix, ptr(withFeatures(retrieval.Options{K: 3, Mode: retrieval.Lexical}, rankopt.Features{Associate: 0.25})))
	if ms, err = assoc.Retrieve(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || ms[0].Tool.Name != "start_music" {
		t.Errorf("with Associate: %q, want start_music first", names(ms))
	}
	if _, err := retrieval.New(ix, ptr(withFeatures(retrieval.Options{}, rankopt.Features{Associate: -1}))); err == nil {
		t.Error("Associate -1 accepted")
	}
}

func ptr[T any](v T) *T { return &v }
