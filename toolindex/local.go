package toolindex

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/toolsift/toolsift/internal/textproc"
)

// localVersion changes whenever [LocalEmbedder]'s vectors change for the same
// settings, so that indexes saved by an older build are refused on [Load]
// instead of being compared with incompatible vectors.
const localVersion = 2

// LocalOptions configures [NewLocalEmbedder]. The zero value (or nil) gives
// the defaults, which are what toolsift was measured with.
type LocalOptions struct {
	// Dims is the vector length. Default 1024; at least 64.
	Dims int
	// MinGram and MaxGram bound the character n-grams taken from each word
	// (with its boundaries marked). Default 3 and 5.
	MinGram, MaxGram int
	// WordWeight, BigramWeight and CharWeight are the shares of the
	// similarity given to whole (stemmed) words, to pairs of adjacent words
	// and to character n-grams. They need not sum to one; only their ratios
	// matter. All zero means the defaults 0.5, 0.15 and 0.35.
	WordWeight, BigramWeight, CharWeight float64
}

// LocalEmbedder is the default [Embedder]: a pure-Go, deterministic, offline
// embedding designed for tool text. It needs no model file, no network and
// no fitting, so any two LocalEmbedders with the same options embed the same
// text to the same vector, on any machine, forever (for one localVersion).
//
// A text becomes three bags of features, each hashed into the same Dims
// dimensions with a signed hash (the sign halves the bias of collisions):
//
//   - words: textproc.Terms (lowercased, identifiers split, stopwords
//     dropped, light Porter stemming) — "calculates" meets "calculated";
//   - bigrams of adjacent words — "stock price" is more than "stock" and
//     "price";
//   - character n-grams (MinGram..MaxGram) of each word with its boundaries
//     marked ("<wea", "weat", ..., "her>") — "calc" meets "calculator",
//     "weather" meets "weatherforecast", typos and morphology degrade softly.
//
// Words made only of digits (and so the values in "a base of 10 and a
// height of 5", dates, ids) are dropped: a literal value in a request
// never says which tool is wanted, and a number in a tool's text rarely
// tells tools apart. The first paragraph of a text that has several (a
// tool document's name and title, see [Document]) is its heading: each of
// its features counts headingWeight times, as the lexical index counts a
// name term twice, so a tool whose name says what the request says beats
// one that only mentions it in a long description. A query is usually one
// paragraph and so all body; a query with a blank line has its first
// paragraph weighed up, which only shifts it towards its opening.
//
// Counts are damped (1+ln tf) so that a word repeated in a long description
// does not dominate, each bag is normalised to unit length and weighted by
// the square root of its share, and the sum is normalised again. The cosine
// of two vectors is then close to the weighted sum of the three bags'
// cosines. There is no corpus-wide IDF on purpose: it would make a
// vector depend on the other tools indexed, and vectors saved with one
// catalog would silently disagree with queries embedded after another; in
// hybrid retrieval the lexical index (BM25F) brings the IDF.
//
// The weights are a priori (words first, then subwords, a little word
// order); measured on two public datasets, no variant of dimensions,
// weights or IDF wins on both except more dimensions, which cost memory
// and search time in proportion, and dropping the parameters from the tool
// document costs the most. docs/measurements.md ("Local embedder") has the
// figures, its speed, and the commands.
//
// LocalEmbedder is safe for concurrent use.
type LocalEmbedder struct {
	dims             int
	minGram, maxGram int
	wWord, wBi, wCh  float64
	id               string
}

var _ Embedder = (*LocalEmbedder)(nil)

// NewLocalEmbedder returns a [LocalEmbedder] with opts (nil for the defaults).
// It returns an error wrapping [ErrDimension] for a Dims below 64, and an
// error for an invalid n-gram range or negative weights.
func NewLocalEmbedder(opts *LocalOptions) (*LocalEmbedder, error) {
	var o LocalOptions
	if opts != nil {
		o = *opts
	}
	if o.Dims == 0 {
		o.Dims = 1024
	}
	if o.MinGram == 0 && o.MaxGram == 0 {
		o.MinGram, o.MaxGram = 3, 5
	}
	if o.WordWeight == 0 && o.BigramWeight == 0 && o.CharWeight == 0 {
		o.WordWeight, o.BigramWeight, o.CharWeight = 0.5, 0.15, 0.35
	}
	switch {
	case o.Dims < 64:
		return nil, fmt.Errorf("%w: local embedder dims %d, want at least 64", ErrDimension, o.Dims)
	case o.MinGram < 1 || o.MaxGram < o.MinGram || o.MaxGram > 16:
		return nil, fmt.Errorf("toolindex: local embedder n-gram range %d..%d, want 1 <= min <= max <= 16", o.MinGram, o.MaxGram)
	case o.WordWeight < 0 || o.BigramWeight < 0 || o.CharWeight < 0:
		return nil, fmt.Errorf("toolindex: local embedder weights must not be negative")
	}
	e := &LocalEmbedder{
		dims: o.Dims, minGram: o.MinGram, maxGram: o.MaxGram,
		wWord: o.WordWeight, wBi: o.BigramWeight, wCh: o.CharWeight,
	}
	e.id = fmt.Sprintf("local:v%d:%d:w%g,b%g,c%g:g%d-%d", localVersion, e.dims, e.wWord, e.wBi, e.wCh, e.minGram, e.maxGram)
	return e, nil
}

// ID returns "local:v<version>:<dims>:<weights>:<n-gram range>", for
// example "local:v2:1024:w0.5,b0.15,c0.35:g3-5".
func (e *LocalEmbedder) ID() string { return e.id }

// Dims returns the vector length.
func (e *LocalEmbedder) Dims() int { return e.dims }

// Embed returns one unit-length vector per text (a text without any word
// gives the zero vector). It only fails when ctx is done.
func (e *LocalEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		out[i] = e.embed(t)
	}
	return out, nil
}

// bag holds the hashed features of one kind, one entry per occurrence.
type bag []uint64

// headingWeight is how many occurrences a word of a text's heading counts
// for: the first paragraph of a text that has more than one (a tool
// document's name and title, see [Document]). It is the lexical index's
// default name field weight, so that both sides of hybrid retrieval trust
// a tool's name alike.
const headingWeight = 2

// features returns the word, bigram and character n-gram bags of text.
// The features of a heading occur headingWeight times in its bags.
func (e *LocalEmbedder) features(text string) (words, bigrams, chars bag) {
	words, bigrams, chars = make(bag, 0, 32), make(bag, 0, 32), make(bag, 0, 256)
	var prev uint64
	havePrev := false
	var buf []byte
	head, body := splitHeading(text)
	for seg, part := range [2]string{head, body} {
		reps := 1
		if seg == 0 && body != "" {
			reps = headingWeight
		}
		for _, w := range textproc.Words(part) {
			if textproc.IsStopword(w) || isDigits(w) {
				continue
			}
			term := textproc.Stem(w)
			th := fnvString(fnvOffset^'w', term)
			b0, c0 := len(bigrams), len(chars)
			words = append(words, mix(th))
			if havePrev {
				bigrams = append(bigrams, mix(fnvString(prev^'b', term)))
			}
			prev, havePrev = th, true
			// character n-grams of the word with its boundaries marked.
			buf = append(buf[:0], '<')
			buf = append(buf, w...)
			buf = append(buf, '>')
			if len(buf) == len(w)+2 && isASCII(w) {
				for n := e.minGram; n <= e.maxGram && n <= len(buf); n++ {
					for i := 0; i+n <= len(buf); i++ {
						chars = append(chars, mix(fnvBytes(fnvOffset^'c', buf[i:i+n])))
					}
				}
			} else {
				runes := []rune(string(buf))
				for n := e.minGram; n <= e.maxGram && n <= len(runes); n++ {
					for i := 0; i+n <= len(runes); i++ {
						chars = append(chars, mix(fnvString(fnvOffset^'c', string(runes[i:i+n]))))
					}
				}
			}
			nb, nc := len(bigrams)-b0, len(chars)-c0
			for r := 1; r < reps; r++ {
				words = append(words, mix(th))
				bigrams = append(bigrams, bigrams[b0:b0+nb]...)
				chars = append(chars, chars[c0:c0+nc]...)
			}
		}
	}
	return words, bigrams, chars
}

// splitHeading splits text at its first blank line into a heading and a
// body. A text without a blank line, or with nothing after it, is all
// heading and has an empty body.
func splitHeading(text string) (head, body string) {
	for i := 0; i < len(text); i++ {
		if text[i] != '\n' {
			continue
		}
		j := i + 1
		for j < len(text) && (text[j] == ' ' || text[j] == '\t' || text[j] == '\r') {
			j++
		}
		if j < len(text) && text[j] == '\n' {
			if rest := strings.TrimSpace(text[j+1:]); rest != "" && strings.TrimSpace(text[:i]) != "" {
				return text[:i], text[j+1:]
			}
			return text, ""
		}
	}
	return text, ""
}

func (e *LocalEmbedder) embed(text string) []float32 {
	words, bigrams, chars := e.features(text)
	acc := make([]float64, e.dims)
	e.add(acc, words, e.wWord)
	e.add(acc, bigrams, e.wBi)
	e.add(acc, chars, e.wCh)
	var sum float64
	for _, x := range acc {
		sum += x * x
	}
	v := make([]float32, e.dims)
	if sum == 0 {
		return v
	}
	inv := 1 / math.Sqrt(sum)
	for i, x := range acc {
		v[i] = float32(x * inv)
	}
	return v
}

// add adds b, damped, normalised and scaled by sqrt(weight), into acc.
// It sorts b to count equal features.
func (e *LocalEmbedder) add(acc []float64, b bag, weight float64) {
	if len(b) == 0 || weight == 0 {
		return
	}
	slices.Sort(b)
	// Compact b into distinct features and their damped counts.
	damped := make([]float64, 0, len(b))
	n := 0
	for i := 0; i < len(b); {
		j := i + 1
		for j < len(b) && b[j] == b[i] {
			j++
		}
		b[n] = b[i]
		damped = append(damped, 1+math.Log(float64(j-i)))
		n++
		i = j
	}
	var norm float64
	for _, d := range damped {
		norm += d * d
	}
	scale := math.Sqrt(weight) / math.Sqrt(norm)
	for k, h := range b[:n] {
		d := damped[k] * scale
		if h>>63 == 1 {
			d = -d
		}
		acc[h%uint64(e.dims)] += d
	}
}

// FNV-1a, inlined to hash without allocating.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

func fnvBytes(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}

// mix is the splitmix64 finaliser: FNV's low and high bits are not
// independent enough to give both the bucket and the sign.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func isDigits(w string) bool {
	for _, r := range w {
		if r < '0' || r > '9' {
			return false
		}
	}
	return w != ""
}
