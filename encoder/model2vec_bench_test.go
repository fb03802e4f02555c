package encoder_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/encoder"
)

// benchWords are whole words of the benchmark vocabulary; the rest of it is
// letters, ## continuations and filler, for a 30,000-token vocabulary like
// a BERT one.
var benchWords = strings.Fields(`get set list create delete update search find read write file files
directory the a an of for to in on with by from current weather forecast city temperature
issue issues pull request repository branch commit message user users email send calendar
event events query database table rows sql run command shell web page url fetch http
price stock market news time date timezone convert currency translate text language image`)

const (
	benchShort = "get the current weather forecast for a city"
	benchLong  = "Search the issues of a repository by text, label and state, and list the " +
		"matching pull requests with their branch, commit message and user; the query " +
		"language supports dates, time zones and the author's email. Returns rows of " +
		"JSON with the title, url and state of each issue, newest first."
)

// benchVocab is a 30,000-token WordPiece vocabulary and seeded random
// vectors of dimension dim for it.
func benchVocab(dim int) ([]string, [][]float32) {
	vocab := []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]"}
	for c := 'a'; c <= 'z'; c++ {
		vocab = append(vocab, string(c), "##"+string(c))
	}
	vocab = append(vocab, ".", ",", ";", ":", "'", "!", "?", "(", ")")
	for _, w := range benchWords {
		if !slices.Contains(vocab, w) {
			vocab = append(vocab, w)
		}
	}
	for i := len(vocab); i < 30000; i++ {
		vocab = append(vocab, fmt.Sprintf("##filler%d", i))
	}
	r := rand.New(rand.NewPCG(1, 2))
	rows := make([][]float32, len(vocab))
	for i := range rows {
		rows[i] = make([]float32, dim)
		for j := range rows[i] {
			rows[i][j] = float32(r.NormFloat64())
		}
	}
	return vocab, rows
}

// benchModel writes and loads the benchVocab model of dimension dim.
func benchModel(b *testing.B, dim int) *encoder.Model2Vec {
	vocab, rows := benchVocab(dim)
	dir, err := makeModel(b.TempDir(), "bench", wordpieceTokenizerJSON(vocab), true, embeddings("F32", rows))
	if err != nil {
		b.Fatal(err)
	}
	m, err := encoder.LoadModel2Vec(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkModel2VecEmbed embeds one text per Embed call, the retrieval
// case (one query per agent step); µs/text is the number to read.
func BenchmarkModel2VecEmbed(b *testing.B) {
	for _, dim := range []int{256, 512} {
		m := benchModel(b, dim)
		for _, text := range []struct{ name, text string }{{"short", benchShort}, {"long", benchLong}} {
			b.Run(fmt.Sprintf("dim=%d/%s", dim, text.name), func(b *testing.B) {
				b.ReportAllocs()
				ctx := context.Background()
				in := []string{text.text}
				for b.Loop() {
					if _, err := m.Embed(ctx, in); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/text")
				b.ReportMetric(float64(len(m.Tokens(text.text))), "tokens/text")
			})
		}
	}
}

// BenchmarkLoadModel2Vec loads a 30,000 × 256 F32 model (31 MB): reading,
// decoding and hashing the tensors, and parsing the tokenizer.
func BenchmarkLoadModel2Vec(b *testing.B) {
	dir := b.TempDir()
	vocab, rows := benchVocab(256)
	modelDir, err := makeModel(dir, "bench", wordpieceTokenizerJSON(vocab), true, embeddings("F32", rows))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encoder.LoadModel2Vec(modelDir, nil); err != nil {
			b.Fatal(err)
		}
	}
}
