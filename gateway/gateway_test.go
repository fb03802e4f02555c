package gateway_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/upstream"
)

func TestOpenRefusesOptions(t *testing.T) {
	for name, o := range map[string]gateway.Options{
		"ServerLogLevel": {Hub: upstream.HubOptions{ServerLogLevel: "info"}},
		"ClientRequests": {Hub: upstream.HubOptions{ClientRequests: gateway.NewClientRequests(nil, 0)}},
		"SessionTimeout": {HTTP: gateway.HTTPOptions{SessionTimeout: -time.Second}},
		"MaxSessions":    {HTTP: gateway.HTTPOptions{MaxSessions: -1}},
		"BodyTimeout":    {HTTP: gateway.HTTPOptions{BodyTimeout: -time.Second}},
		"MaxTools":       {MaxTools: -1},
		"SearchBudget":   {SearchBudget: -1},
		"MaxResultBytes": {MaxResultBytes: -1},
	} {
		t.Run(name, func(t *testing.T) {
			o.Toolset.NoSemantic, o.Toolset.Store = true, store.NewMemory()
			gw, err := gateway.Open(context.Background(), localTools(t), &o)
			if !errors.Is(err, gateway.ErrOptions) {
				if gw != nil {
					gw.Close()
				}
				t.Fatalf("Open: %v, want ErrOptions", err)
			}
		})
	}
}
