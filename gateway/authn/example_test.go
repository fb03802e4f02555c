package authn_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/toolsift/toolsift/gateway/authn"
)

// apiKeys is a Verifier of one's own: the keys a program already hands
// out, here in a map by their SHA-256 (a lookup by hash tells nothing of
// a key by its timing).
type apiKeys map[[sha256.Size]byte]authn.Identity

func (k apiKeys) Verify(_ context.Context, bearer string) (authn.Identity, error) {
	id, ok := k[sha256.Sum256([]byte(bearer))]
	if !ok {
		// Not a valid credential: 401. Any other error would be "cannot
		// check now": 503.
		return authn.Identity{}, fmt.Errorf("%w: not one of our API keys", authn.ErrUnknownToken)
	}
	return id, nil
}

// Bring your own Verifier: Require refuses the requests it refuses and
// gives the others its Identity, which the handler behind (a
// gateway.Gateway's Handler, here a page that greets) reads.
func Example_verifier() {
	keys := apiKeys{sha256.Sum256([]byte("key-of-alice")): {User: "alice", Teams: []string{"eng"}}}
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := authn.IdentityFrom(r.Context())
		fmt.Fprintf(w, "hello %s of %v", id.User, id.Teams)
	})
	srv := httptest.NewServer(authn.Require(keys, &authn.Options{Hint: "send your API key (Authorization: Bearer KEY)"})(hello))
	defer srv.Close()

	for _, key := range []string{"key-of-alice", "key-of-mallory"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%s: %s", resp.Status, body)
		if resp.StatusCode == http.StatusOK {
			fmt.Println()
		}
	}
	// Output:
	// 200 OK: hello alice of [eng]
	// 401 Unauthorized: 401 unauthorized: send your API key (Authorization: Bearer KEY)
}
