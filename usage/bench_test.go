package usage_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/toolsift/toolsift/usage"
)

// BenchmarkVotes: what a ranking pays to consult a full scope (the
// default MaxCalls, 512-dimension vectors as the bundled encoder's).
func BenchmarkVotes(b *testing.B) {
	for _, n := range []int{256, 1024, 4096} { // 4096: the default MaxCalls
		b.Run(fmt.Sprintf("calls=%d", n), func(b *testing.B) {
			m, err := usage.New(nil)
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			vec := func() []float32 {
				v := make([]float32, 512)
				for i := range v {
					v[i] = float32(rng.NormFloat64())
				}
				return unit(v)
			}
			words := func() string {
				s := ""
				for range 6 {
					s += fmt.Sprintf("w%d ", rng.IntN(2000))
				}
				return s
			}
			for i := range n {
				ev := usage.Event{Caller: usage.Caller{Identity: fmt.Sprintf("u%d", i%5)}, Request: usage.Request{Vector: vec(), Terms: terms(words())},
					Tool: fmt.Sprintf("tool_%d", rng.IntN(300)), Hash: "h", Time: time.Unix(int64(i), 0)}
				if err := m.Record(ev); err != nil {
					b.Fatal(err)
				}
			}
			q := usage.Request{Vector: vec(), Terms: terms(words())}
			valid := func(string, string) bool { return true }
			b.ReportAllocs()
			for b.Loop() {
				m.Votes(usage.Caller{Identity: "u1"}, usage.Query{Request: q, Valid: valid})
			}
		})
	}
}
