package postgres

// OwnWrites is how many own writes s keeps for its watches' catch-ups.
func OwnWrites(s *Store) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mine)
}
