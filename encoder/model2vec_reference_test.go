package encoder_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/toolsift/toolsift/encoder"
)

// tokenizersDir holds the pinned Hugging Face tokenizers library (its
// Node binding, which ships the Rust library); .ci/run installs it with
// npm ci from the lockfile.
const tokenizersDir = "testdata/npm"

// requireTokenizers skips when the reference library is not installed,
// except in CI, where its absence is a failure.
func requireTokenizers(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(tokenizersDir)
	if err != nil {
		t.Fatal(err)
	}
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not on PATH"
	} else if _, err := os.Stat(filepath.Join(dir, "node_modules/tokenizers/index.js")); err != nil {
		missing = "the tokenizers library is not installed"
	}
	if missing != "" {
		// As internal/npmtest.Required: encoder's tests import nothing of ours.
		if os.Getenv("CI") == "true" || os.Getenv("TOOLSIFT_TEST_NPM_REQUIRED") == "1" {
			t.Fatalf("the npm tokenizers library must be installed here (CI=true or TOOLSIFT_TEST_NPM_REQUIRED=1): %s", missing)
		}
		t.Skipf("%s: run the test command, bash .ci/test, which installs it (npm ci in encoder/testdata/npm) and runs every test", missing)
	}
	return dir
}

// referenceIDs tokenizes texts with the tokenizers library.
func referenceIDs(t *testing.T, dir, tokenizerPath string, texts []string) [][]int {
	t.Helper()
	req, err := json.Marshal(map[string]any{"tokenizer": tokenizerPath, "texts": texts})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", filepath.Join(dir, "tokenize.js"))
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(req)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node tokenize.js: %v\n%s", err, stderr.String())
	}
	var ids [][]int
	if err := json.Unmarshal(out, &ids); err != nil {
		t.Fatalf("node tokenize.js: %v\n%s", err, out)
	}
	return ids
}

// TestModel2VecTokensMatchReference checks the WordPiece pipeline
// (added tokens, normalizers, BertPreTokenizer, WordPiece) against the
// tokenizers library that model2vec uses, on texts chosen to hit its edge
// cases. Unknown tokens are dropped on both sides, as model2vec does.
func TestModel2VecTokensMatchReference(t *testing.T) {
	dir := requireTokenizers(t)
	vocab := []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
	for c := 'a'; c <= 'z'; c++ {
		vocab = append(vocab, string(c), "##"+string(c))
	}
	for c := '0'; c <= '9'; c++ {
		vocab = append(vocab, string(c), "##"+string(c))
	}
	for _, c := range "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~…—–«»¿¡" {
		vocab = append(vocab, string(c))
	}
	for _, w := range []string{"the", "play", "##ing", "##er", "tool", "##s", "search", "weather", "cafe",
		"naive", "中", "国", "σ", "ς", "##σ", "##ς", "ß", "##ß", "i̇", "é", "##é", "ü", "##ü", "あ", "い",
		"한", "##국", "ｄ", "fi", "ﬁ", "##ﬁ", "ⅻ", "new york", "tiếng", "viet", "##̇", "ab", "<rs>"} {
		if !slices.Contains(vocab, w) {
			vocab = append(vocab, w)
		}
	}
	texts := []string{
		"The tools!", "Café NAÏVE résumé", "playing player plays", "中国weather", "tool,search.weather",
		"wea\u0000ther se\u200barch\u0085x\u00a0y\u3000z\tq\nr\rs\vt\fu", "[CLS] search[SEP] [MASK]x  [MASK]",
		"[cls] [mask]", "ΣΑΣ σας", "İstanbul", "STRASSE straße", "ＡＢＣ ｄｅｆ", "ﬁne ﬁ", "Ⅻ ⅻ",
		"I love New York! NEW YORK new  york", "don't e-mail $100 a+b=c U.S.A. …", "Tiếng Việt", "あい 한국",
		"😀 smile 🎉", "a\u0301 e\u0301", "x" + string(bytes.Repeat([]byte("a"), 120)) + " b",
		"\U000e0001tag \ue000pua \U0010ffff", "¿Qué? ¡Sí! «quote» — dash – en", "_under_score_", "",
		"  ", "##s", "a##b", "\u2028line\u2029para", "\u200d\u200czw", "日本語テキスト", "Ǆ ǅ ǆ", "ﬃ",
		"a\u0378b a\uffffb a\U0001fae8b a\u9fffb a\U0002b820b a\U0002b920b", "x\u00adyz soft\u00adhyphen",
		"ab tab xab ab, AB_ab ab9 éab", "a <rs>  b<rs>c <RS>",
	}
	normalizers := map[string]map[string]any{
		"bert":           {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": nil, "lowercase": true},
		"bert keep case": {"type": "BertNormalizer", "clean_text": false, "handle_chinese_chars": false, "strip_accents": true, "lowercase": false},
		"bert accents":   {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": false, "lowercase": true},
		"nfkc lowercase": {"type": "Sequence", "normalizers": []any{map[string]any{"type": "NFKC"}, map[string]any{"type": "Lowercase"}}},
		"none":           nil,
	}
	rows := make([][]float32, len(vocab))
	for i := range rows {
		rows[i] = []float32{float32(i), 1}
	}
	for name, nz := range normalizers {
		t.Run(name, func(t *testing.T) {
			tj := wordpieceTokenizerJSON(vocab)
			tj["added_tokens"] = append(tj["added_tokens"].([]map[string]any),
				map[string]any{"id": 4, "content": "[MASK]", "single_word": false, "lstrip": true, "rstrip": false, "normalized": false, "special": true},
				map[string]any{"id": slices.Index(vocab, "new york"), "content": "new york", "single_word": false, "lstrip": false, "rstrip": false, "normalized": true, "special": false},
				map[string]any{"id": slices.Index(vocab, "ab"), "content": "ab", "single_word": true, "lstrip": false, "rstrip": false, "normalized": true, "special": false},
				map[string]any{"id": slices.Index(vocab, "<rs>"), "content": "<rs>", "single_word": false, "lstrip": false, "rstrip": true, "normalized": false, "special": true})
			tj["normalizer"] = nz
			modelDir, err := makeModel(t.TempDir(), "ref", tj, true, embeddings("F32", rows))
			if err != nil {
				t.Fatal(err)
			}
			m, err := encoder.LoadModel2Vec(modelDir, &encoder.Model2VecOptions{MaxLength: -1})
			if err != nil {
				t.Fatal(err)
			}
			ref := referenceIDs(t, dir, filepath.Join(modelDir, "tokenizer.json"), texts)
			for i, text := range texts {
				var want []string
				for _, id := range ref[i] {
					if vocab[id] != "[UNK]" {
						want = append(want, vocab[id])
					}
				}
				if diff := cmp.Diff(want, m.Tokens(text), cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("Tokens(%q) (-tokenizers +ours):\n%s", text, diff)
				}
			}
		})
	}
}
