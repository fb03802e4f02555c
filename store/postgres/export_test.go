package postgres

import "context"

// OwnWrites is how many own writes s keeps for its watches' catch-ups.
func OwnWrites(s *Store) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mine)
}

// Sweep deletes the dead rows of the shared rate limits now.
func Sweep(s *Store) (int64, error) { return s.sweep(context.Background()) }

// SweepSoon makes the next TakeToken of s start a sweep.
func SweepSoon(s *Store) { s.swept.Store(0) }
