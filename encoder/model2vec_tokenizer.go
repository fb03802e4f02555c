package encoder

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// This file reads the parts of a Hugging Face tokenizer.json that a
// Model2Vec model needs to turn text into token ids: the added tokens, the
// normalizer, the pre-tokenizer and a WordPiece model. The post-processor
// (which adds [CLS] and [SEP]) is ignored on purpose: model2vec encodes
// with add_special_tokens=False. Behaviour follows the tokenizers library:
//
//	text ─▶ split out added tokens that match the raw text (normalized: false)
//	     ─▶ normalize the rest ─▶ split out added tokens that match it (normalized: true)
//	     ─▶ pre-tokenize into words ─▶ WordPiece each word (a word with no
//	        segmentation is one unknown token)
//
// TestModel2VecTokensMatchReference checks this against the library. Known
// differences: a "padding" setting is ignored (the library would add pad
// tokens to the shorter texts of a batch, and model2vec would average
// them in); and character classes come from Go's Unicode tables, which can
// be newer than the library's (U+0890, format in Unicode 14, is dropped
// here and kept there).

// m2vTokenizerJSON is the subset of tokenizer.json we read.
type m2vTokenizerJSON struct {
	AddedTokens  []m2vAddedToken `json:"added_tokens"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Truncation   *struct {
		MaxLength int    `json:"max_length"`
		Direction string `json:"direction"`
	} `json:"truncation"`
	Model struct {
		Type                    string           `json:"type"`
		UnkToken                string           `json:"unk_token"`
		ContinuingSubwordPrefix *string          `json:"continuing_subword_prefix"`
		MaxInputCharsPerWord    *int             `json:"max_input_chars_per_word"`
		Vocab                   json.RawMessage  `json:"vocab"`
		vocab                   map[string]int64 // Vocab, when it is an object
	} `json:"model"`
}

type m2vAddedToken struct {
	ID         int64  `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// wordpieceTokenizer turns text into token ids. It is immutable once built
// and so safe for concurrent use.
type wordpieceTokenizer struct {
	norm     m2vNormalizer
	pre      m2vPreTokenizer
	vocab    map[string]int32
	unk      int32
	prefix   string
	maxChars int
	// rawAdded and normAdded are the added tokens matched before and
	// after normalization (by their "normalized" flag).
	rawAdded, normAdded m2vAddedSet
	truncate            int  // from tokenizer.json's truncation; 0 means none
	truncateLeft        bool // keep the last tokens instead of the first
	size                int  // distinct ids in the vocabulary and added tokens
	tokenLens           []int
}

// m2vParseTokenizer builds a tokenizer from the bytes of tokenizer.json;
// name is the file, for errors.
func m2vParseTokenizer(data []byte, name string) (*wordpieceTokenizer, error) {
	var tj m2vTokenizerJSON
	if err := json.Unmarshal(data, &tj); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrModel2VecInvalid, name, err)
	}
	switch tj.Model.Type {
	case "WordPiece":
	case "":
		// Old files leave the type out; a WordPiece one still has its
		// continuing_subword_prefix.
		if tj.Model.ContinuingSubwordPrefix == nil {
			return nil, fmt.Errorf("%w: %s: field model.type is missing", ErrModel2VecInvalid, name)
		}
	default:
		return nil, fmt.Errorf("%w: %s: field model.type is %q; only WordPiece tokenizers are supported", ErrModel2VecUnsupported, name, tj.Model.Type)
	}
	if err := json.Unmarshal(tj.Model.Vocab, &tj.Model.vocab); err != nil || len(tj.Model.vocab) == 0 {
		return nil, fmt.Errorf("%w: %s: field model.vocab is not a non-empty object of token to id", ErrModel2VecInvalid, name)
	}
	tok := &wordpieceTokenizer{vocab: make(map[string]int32, len(tj.Model.vocab)), prefix: "##", maxChars: 100}
	if p := tj.Model.ContinuingSubwordPrefix; p != nil {
		tok.prefix = *p
	}
	if m := tj.Model.MaxInputCharsPerWord; m != nil {
		tok.maxChars = *m
	}
	// ids maps every id to its token, to count distinct ids and to find
	// the median token length as model2vec does (over the whole vocabulary,
	// added tokens included).
	ids := make(map[int64]string, len(tj.Model.vocab)+len(tj.AddedTokens))
	for t, id := range tj.Model.vocab {
		if id < 0 || id > 1<<31-1 {
			return nil, fmt.Errorf("%w: %s: field model.vocab: token %q has id %d", ErrModel2VecInvalid, name, t, id)
		}
		tok.vocab[t] = int32(id)
		ids[id] = t
	}
	unk, ok := tok.vocab[tj.Model.UnkToken]
	if !ok {
		return nil, fmt.Errorf("%w: %s: field model.unk_token %q is not in model.vocab", ErrModel2VecInvalid, name, tj.Model.UnkToken)
	}
	tok.unk = unk

	var err error
	if tok.norm, err = m2vParseNormalizer(tj.Normalizer, name, "normalizer"); err != nil {
		return nil, err
	}
	if tok.pre, err = m2vParsePreTokenizer(tj.PreTokenizer, name, "pre_tokenizer"); err != nil {
		return nil, err
	}
	var raw, normed []m2vAddedToken
	for i, at := range tj.AddedTokens {
		if at.ID < 0 || at.ID > 1<<31-1 || at.Content == "" {
			return nil, fmt.Errorf("%w: %s: field added_tokens[%d]: id %d, content %q", ErrModel2VecInvalid, name, i, at.ID, at.Content)
		}
		ids[at.ID] = at.Content
		if at.Normalized {
			// Matched in normalized text, so normalized itself.
			at.Content = tok.norm.normalize(at.Content)
			if at.Content == "" {
				continue
			}
			normed = append(normed, at)
		} else {
			raw = append(raw, at)
		}
	}
	tok.rawAdded = m2vNewAddedSet(raw)
	tok.normAdded = m2vNewAddedSet(normed)
	if tr := tj.Truncation; tr != nil && tr.MaxLength > 0 {
		tok.truncate = tr.MaxLength
		tok.truncateLeft = tr.Direction == "Left"
	}
	tok.size = len(ids)
	tok.tokenLens = make([]int, 0, len(ids))
	for _, t := range ids {
		tok.tokenLens = append(tok.tokenLens, utf8.RuneCountInString(t))
	}
	return tok, nil
}

// medianTokenLen is int(np.median(lengths)) over the vocabulary, which
// model2vec multiplies by the maximum length to cut long texts before
// tokenizing them.
func (tok *wordpieceTokenizer) medianTokenLen() int {
	l := slices.Clone(tok.tokenLens)
	slices.Sort(l)
	n := len(l)
	if n%2 == 1 {
		return l[n/2]
	}
	return (l[n/2-1] + l[n/2]) / 2
}

// tokenize appends the ids of text to ids, in order, unknown ones included.
func (tok *wordpieceTokenizer) tokenize(text string, ids []int32) []int32 {
	m2vSplitAdded(text, &tok.rawAdded, func(piece string, id int32) {
		if id >= 0 {
			ids = append(ids, id)
			return
		}
		m2vSplitAdded(tok.norm.normalize(piece), &tok.normAdded, func(piece string, id int32) {
			if id >= 0 {
				ids = append(ids, id)
				return
			}
			tok.pre.split(piece, func(word string) { ids = tok.wordpiece(word, ids) })
		})
	})
	if tok.truncate > 0 && len(ids) > tok.truncate {
		if tok.truncateLeft {
			ids = append(ids[:0], ids[len(ids)-tok.truncate:]...)
		} else {
			ids = ids[:tok.truncate]
		}
	}
	return ids
}

// wordpiece appends the greedy longest-match-first segmentation of word to
// ids: the longest vocabulary entry that starts the word, then the longest
// prefix+piece that starts the rest, and so on. A word with a piece that
// matches nothing, or longer than maxChars characters, is one unknown token.
func (tok *wordpieceTokenizer) wordpiece(word string, ids []int32) []int32 {
	if utf8.RuneCountInString(word) > tok.maxChars {
		return append(ids, tok.unk)
	}
	n := len(ids)
	var buf []byte
	for start := 0; start < len(word); {
		end := len(word)
		found := int32(-1)
		for end > start {
			buf = buf[:0]
			if start > 0 {
				buf = append(buf, tok.prefix...)
			}
			buf = append(buf, word[start:end]...)
			if id, ok := tok.vocab[string(buf)]; ok {
				found = id
				break
			}
			_, size := utf8.DecodeLastRuneInString(word[start:end])
			end -= size
		}
		if found < 0 {
			return append(ids[:n], tok.unk)
		}
		ids = append(ids, found)
		start = end
	}
	return ids
}

// m2vAddedSet finds added tokens in text: a byte trie of their contents,
// so that a model with thousands of added (multi-word) tokens costs about
// one step per byte of text, like the Aho-Corasick matcher of tokenizers.
type m2vAddedSet struct {
	tokens []m2vAddedToken
	nodes  []m2vTrieNode // nodes[0] is the root
	first  [256]bool     // bytes that start a token, to skip the rest fast
}

type m2vTrieNode struct {
	next map[byte]int32
	tok  int32 // index in tokens of the token ending here, or -1
}

func m2vNewAddedSet(tokens []m2vAddedToken) m2vAddedSet {
	s := m2vAddedSet{tokens: tokens}
	if len(tokens) == 0 {
		return s
	}
	s.nodes = []m2vTrieNode{{tok: -1}}
	for i, at := range tokens {
		s.first[at.Content[0]] = true
		n := int32(0)
		for j := 0; j < len(at.Content); j++ {
			c := at.Content[j]
			next, ok := s.nodes[n].next[c]
			if !ok {
				if s.nodes[n].next == nil {
					s.nodes[n].next = map[byte]int32{}
				}
				next = int32(len(s.nodes))
				s.nodes[n].next[c] = next
				s.nodes = append(s.nodes, m2vTrieNode{tok: -1})
			}
			n = next
		}
		s.nodes[n].tok = int32(i) // a later duplicate wins, as in a map
	}
	return s
}

// match returns the longest added token that starts text[i:]. A
// single_word token that is part of a longer word there does not match.
func (s *m2vAddedSet) match(text string, i int) (m2vAddedToken, bool) {
	if !s.first[text[i]] {
		return m2vAddedToken{}, false
	}
	best := int32(-1)
	for n, j := int32(0), i; j < len(text); j++ {
		next, ok := s.nodes[n].next[text[j]]
		if !ok {
			break
		}
		n = next
		if s.nodes[n].tok >= 0 {
			best = s.nodes[n].tok
		}
	}
	if best < 0 {
		return m2vAddedToken{}, false
	}
	at := s.tokens[best]
	if at.SingleWord {
		end := i + len(at.Content)
		before, _ := utf8.DecodeLastRuneInString(text[:i])
		after, _ := utf8.DecodeRuneInString(text[end:])
		if i > 0 && m2vWordChar(before) || end < len(text) && m2vWordChar(after) {
			return m2vAddedToken{}, false
		}
	}
	return at, true
}

// m2vSplitAdded cuts text at the leftmost-longest occurrences of the added
// tokens and calls f with each piece in order: text pieces with id -1,
// added tokens with their id. An lstrip (rstrip) token takes the
// whitespace on its left (right) with it.
func m2vSplitAdded(text string, added *m2vAddedSet, f func(string, int32)) {
	if len(added.tokens) == 0 {
		if text != "" {
			f(text, -1)
		}
		return
	}
	last := 0
	for i := 0; i < len(text); {
		at, ok := added.match(text, i)
		if !ok {
			i++
			continue
		}
		start, end := i, i+len(at.Content)
		if at.LStrip {
			start = len(strings.TrimRightFunc(text[last:start], unicode.IsSpace)) + last
		}
		if at.RStrip {
			end = len(text) - len(strings.TrimLeftFunc(text[end:], unicode.IsSpace))
		}
		if start > last {
			f(text[last:start], -1)
		}
		f(at.Content, int32(at.ID))
		last, i = end, end
	}
	if last < len(text) {
		f(text[last:], -1)
	}
}

func m2vWordChar(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// m2vNormalizer is a chain of normalization steps; an empty one changes
// nothing.
type m2vNormalizer []func(string) string

func (n m2vNormalizer) normalize(s string) string {
	for _, step := range n {
		s = step(s)
	}
	return s
}

// m2vParseNormalizer reads the normalizer field (null, one normalizer, or a
// Sequence of them); field is its path in the file, for errors.
func m2vParseNormalizer(raw json.RawMessage, name, field string) (m2vNormalizer, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var n struct {
		Type               string            `json:"type"`
		CleanText          *bool             `json:"clean_text"`
		HandleChineseChars *bool             `json:"handle_chinese_chars"`
		StripAccents       *bool             `json:"strip_accents"`
		Lowercase          *bool             `json:"lowercase"`
		Normalizers        []json.RawMessage `json:"normalizers"`
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		return nil, fmt.Errorf("%w: %s: field %s: %v", ErrModel2VecInvalid, name, field, err)
	}
	switch n.Type {
	case "BertNormalizer":
		def := func(b *bool, d bool) bool {
			if b == nil {
				return d
			}
			return *b
		}
		lower := def(n.Lowercase, true)
		var steps m2vNormalizer
		if def(n.CleanText, true) {
			steps = append(steps, wordpieceCleanText)
		}
		if def(n.HandleChineseChars, true) {
			steps = append(steps, wordpieceSpaceChinese)
		}
		// strip_accents: null means "as lowercase".
		if def(n.StripAccents, lower) {
			steps = append(steps, m2vStripAccents)
		}
		if lower {
			steps = append(steps, m2vLowercase)
		}
		return steps, nil
	case "Lowercase":
		return m2vNormalizer{m2vLowercase}, nil
	case "StripAccents":
		return m2vNormalizer{m2vDropNonspacingMarks}, nil
	case "NFD":
		return m2vNormalizer{norm.NFD.String}, nil
	case "NFC":
		return m2vNormalizer{norm.NFC.String}, nil
	case "NFKD":
		return m2vNormalizer{norm.NFKD.String}, nil
	case "NFKC":
		return m2vNormalizer{norm.NFKC.String}, nil
	case "Sequence":
		var steps m2vNormalizer
		for i, sub := range n.Normalizers {
			s, err := m2vParseNormalizer(sub, name, fmt.Sprintf("%s.normalizers[%d]", field, i))
			if err != nil {
				return nil, err
			}
			steps = append(steps, s...)
		}
		return steps, nil
	default:
		return nil, fmt.Errorf("%w: %s: field %s.type is %q; supported: BertNormalizer, Lowercase, StripAccents, NFD, NFC, NFKD, NFKC, Sequence", ErrModel2VecUnsupported, name, field, n.Type)
	}
}

// wordpieceCleanText drops NUL, U+FFFD and control characters (categories
// Cc, Cf, Co and Cs, but not tab, newline and carriage return) and turns
// every whitespace character into a space. Unassigned code points stay, as
// in the tokenizers library (checked against it).
func wordpieceCleanText(s string) string {
	clean := true
	for i := 0; i < len(s) && clean; i++ {
		clean = s[i] >= ' ' && s[i] < 0x7f // printable ASCII stays as it is
	}
	if clean {
		return s
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r == 0 || r == utf8.RuneError:
			return -1
		case r == '\t' || r == '\n' || r == '\r':
			return ' '
		case unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs):
			return -1
		case unicode.Is(unicode.White_Space, r):
			return ' '
		}
		return r
	}, s)
}

// wordpieceSpaceChinese puts spaces around CJK ideographs, so that each is
// a word of its own (the ranges are BERT's).
func wordpieceSpaceChinese(s string) string {
	if !strings.ContainsFunc(s, wordpieceIsChinese) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if wordpieceIsChinese(r) {
			b.WriteByte(' ')
			b.WriteRune(r)
			b.WriteByte(' ')
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func wordpieceIsChinese(r rune) bool {
	return r >= 0x4E00 && r <= 0x9FFF ||
		r >= 0x3400 && r <= 0x4DBF ||
		r >= 0x20000 && r <= 0x2A6DF ||
		r >= 0x2A700 && r <= 0x2B73F ||
		r >= 0x2B740 && r <= 0x2B81F ||
		r >= 0x2B920 && r <= 0x2CEAF ||
		r >= 0xF900 && r <= 0xFAFF ||
		r >= 0x2F800 && r <= 0x2FA1F
}

// m2vStripAccents decomposes (NFD) and drops the nonspacing marks: "Café"
// becomes "Cafe".
func m2vStripAccents(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return m2vDropNonspacingMarks(norm.NFD.String(s))
		}
	}
	return s
}

func m2vDropNonspacingMarks(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Mn, r) {
			return -1
		}
		return r
	}, s)
}

// m2vLowercase lowercases rune by rune with the full Unicode mapping, as
// Rust's char::to_lowercase does: the only rune whose lowercase is two runes
// is U+0130 (İ), which becomes "i̇".
func m2vLowercase(s string) string {
	if !strings.ContainsRune(s, 'İ') {
		return strings.Map(unicode.ToLower, s)
	}
	return strings.ReplaceAll(strings.Map(func(r rune) rune {
		if r == 'İ' {
			return r
		}
		return unicode.ToLower(r)
	}, s), "İ", "i\u0307")
}

// m2vPreTokenizer splits normalized text into words.
type m2vPreTokenizer struct {
	kind string
}

// m2vParsePreTokenizer reads the pre_tokenizer field.
func m2vParsePreTokenizer(raw json.RawMessage, name, field string) (m2vPreTokenizer, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return m2vPreTokenizer{}, nil
	}
	var p struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return m2vPreTokenizer{}, fmt.Errorf("%w: %s: field %s: %v", ErrModel2VecInvalid, name, field, err)
	}
	switch p.Type {
	case "BertPreTokenizer", "WhitespaceSplit":
		return m2vPreTokenizer{kind: p.Type}, nil
	default:
		return m2vPreTokenizer{}, fmt.Errorf("%w: %s: field %s.type is %q; supported: BertPreTokenizer, WhitespaceSplit", ErrModel2VecUnsupported, name, field, p.Type)
	}
}

// split calls f with each word of s. With no pre-tokenizer the whole text
// is one word; WhitespaceSplit cuts at whitespace; BertPreTokenizer also
// makes every punctuation character (Unicode P, or ASCII punctuation such
// as $ + < = > ^ ` | ~) a word of its own.
func (p m2vPreTokenizer) split(s string, f func(string)) {
	if p.kind == "" {
		if s != "" {
			f(s)
		}
		return
	}
	bert := p.kind == "BertPreTokenizer"
	start := -1
	for i, r := range s {
		switch {
		case m2vIsSpace(r):
			if start >= 0 {
				f(s[start:i])
				start = -1
			}
		case bert && wordpieceIsPunct(r):
			if start >= 0 {
				f(s[start:i])
				start = -1
			}
			f(s[i : i+utf8.RuneLen(r)])
		default:
			if start < 0 {
				start = i
			}
		}
	}
	if start >= 0 {
		f(s[start:])
	}
}

// m2vIsSpace is Unicode White_Space, which Rust's char::is_whitespace
// uses, with a fast path for ASCII.
func m2vIsSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || r >= '\t' && r <= '\r'
	}
	return unicode.Is(unicode.White_Space, r)
}

func wordpieceIsPunct(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= '!' && r <= '/' || r >= ':' && r <= '@' || r >= '[' && r <= '`' || r >= '{' && r <= '~'
	}
	return unicode.IsPunct(r)
}
