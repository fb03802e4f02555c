package gateway_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/upstream"
)

func TestOpenRefusesOptions(t *testing.T) {
	for name, o := range map[string]gateway.Options{
		"ServerLogLevel":        {Hub: upstream.HubOptions{ServerLogLevel: "info"}},
		"ClientRequests":        {Hub: upstream.HubOptions{ClientRequests: gateway.NewClientRequests(nil, 0)}},
		"SessionTimeout":        {HTTP: gateway.HTTPOptions{SessionTimeout: -time.Second}},
		"MaxSessions":           {HTTP: gateway.HTTPOptions{MaxSessions: -1}},
		"BodyTimeout":           {HTTP: gateway.HTTPOptions{BodyTimeout: -time.Second}},
		"Search.MaxTools":       {Search: gateway.SearchOptions{MaxTools: -1}},
		"Search.Budget":         {Search: gateway.SearchOptions{Budget: -1}},
		"Search.LearnScope":     {Search: gateway.SearchOptions{LearnScope: 7}},
		"Limits.MaxResultBytes": {Limits: gateway.Limits{MaxResultBytes: -1}},
	} {
		t.Run(name, func(t *testing.T) {
			o.Toolset.NoSemantic, o.Toolset.Store = true, store.NewMemory()
			gw, err := gateway.Open(context.Background(), localTools(t), &o)
			if !errors.Is(err, gateway.ErrOptions) || !strings.Contains(err.Error(), name) {
				if gw != nil {
					gw.Close()
				}
				t.Fatalf("Open: %v, want ErrOptions naming %s", err, name)
			}
		})
	}
}
