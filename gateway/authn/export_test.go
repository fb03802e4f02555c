package authn

import "time"

// SetClock makes t read the time from now (the cache's expiry).
func (t *Tokens) SetClock(now func() time.Time) { t.now = now }

// SetClock makes o read the time from now (expiry, key refetches).
func (o *OIDC) SetClock(now func() time.Time) { o.now = now }
