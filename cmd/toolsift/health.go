package main

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/upstream"
)

// health is what /healthz and /readyz answer, as JSON: counts only, so
// that probes of a gateway open to the internet learn nothing of its
// servers but how many there are.
type health struct {
	Ready bool `json:"ready"`
	// Servers is how many the config has; Connecting how many have not
	// listed their tools yet, Failed how many failed (their tools will
	// not come: serve's log says why), Login how many per-user servers
	// nobody has logged in to yet (their tools join at the first login;
	// not counted as failed).
	Servers    int `json:"servers"`
	Connecting int `json:"connecting"`
	Failed     int `json:"failed"`
	Login      int `json:"login"`
}

// healthHandler answers the probes of load balancers and orchestrators,
// unauthenticated: GET /healthz, live (200 while serve runs), and GET
// /readyz, ready (200 once every server has listed its tools or failed,
// 503 while some are still connecting). Both say the counts (health);
// lp, when not nil, tells the per-user servers awaiting their first login
// from the failed ones (the shared Hub cannot list them before it).
func healthHandler(ts *toolsift.Toolset, lp gateway.LoginPender) http.Handler {
	mux := http.NewServeMux()
	answer := func(w http.ResponseWriter, r *http.Request, live bool) {
		connecting, failed, login := 0, 0, 0
		st := ts.Status()
		if in := ts.Unlisted(context.Background()); in != nil {
			connecting = len(in.Connecting)
		}
		for _, s := range st {
			if s.State != upstream.StateFailed {
				continue
			}
			if lp != nil {
				if _, pending := lp.LoginPending(r.Context(), s.Name); pending {
					login++
					continue
				}
			}
			failed++
		}
		h := health{Ready: connecting == 0, Servers: len(st), Connecting: connecting, Failed: failed, Login: login}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if !live && !h.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(h)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { answer(w, r, true) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) { answer(w, r, false) })
	return mux
}
