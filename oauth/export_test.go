package oauth

import (
	"context"
	"time"
)

// SetExpiry changes when serverURL's stored access token expires, as time
// passing would.
func SetExpiry(s *Store, serverURL string, t time.Time) error {
	r, err := s.load(context.Background(), serverURL)
	if err != nil || r == nil {
		return err
	}
	r.Expiry = t
	return s.save(context.Background(), r)
}
