package main

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/upstream"
)

// health is what /healthz and /readyz answer, as JSON: counts only, so
// that probes of a gateway open to the internet learn nothing of its
// servers but how many there are.
type health struct {
	Ready bool `json:"ready"`
	// Servers is how many the config has; Connecting how many have not
	// listed their tools yet, Failed how many failed (their tools will
	// not come: serve's log says why).
	Servers    int `json:"servers"`
	Connecting int `json:"connecting"`
	Failed     int `json:"failed"`
}

// healthHandler answers the probes of load balancers and orchestrators,
// unauthenticated: GET /healthz, live (200 while serve runs), and GET
// /readyz, ready (200 once every server has listed its tools or failed,
// 503 while some are still connecting). Both say the counts (health).
func healthHandler(ts *toolsift.Toolset) http.Handler {
	mux := http.NewServeMux()
	answer := func(w http.ResponseWriter, live bool) {
		connecting, failed := 0, 0
		st := ts.Status()
		if in := ts.Unlisted(context.Background()); in != nil {
			connecting = len(in.Connecting)
		}
		for _, s := range st {
			if s.State == upstream.StateFailed {
				failed++
			}
		}
		h := health{Ready: connecting == 0, Servers: len(st), Connecting: connecting, Failed: failed}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if !live && !h.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(h)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { answer(w, true) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) { answer(w, false) })
	return mux
}
