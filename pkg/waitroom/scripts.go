package waitroom

import (
	"context"
	"embed"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// The waiting room's own scripts, one file per operation under lua/: taking
// a ticket, moving the gate, and a pass of the waitlist's offers. They run
// on the buyer's path (a ticket) and the gate's, through stock.Store.Eval.
//
//go:embed lua/*.lua
var luaFS embed.FS

func mustScript(name string) *redis.Script {
	b, err := luaFS.ReadFile("lua/" + name)
	if err != nil {
		panic(fmt.Sprintf("waitroom: embedded script %s: %v", name, err)) // build-time invariant
	}
	return redis.NewScript(string(b))
}

var (
	ticketTakeScript    = mustScript("ticket_take.lua")
	gateAdvanceScript   = mustScript("gate_advance.lua")
	waitlistOfferScript = mustScript("waitlist_offer.lua")
)

// LoadScripts loads the waiting room's scripts once at start-up (on a
// Cluster, on every shard), so the first tickets do not pay for EVAL. An
// optimisation: NOSCRIPT is handled on every call.
func LoadScripts(ctx context.Context, rdb redis.Scripter) error {
	for _, s := range []*redis.Script{ticketTakeScript, gateAdvanceScript, waitlistOfferScript} {
		if err := s.Load(ctx, rdb).Err(); err != nil {
			return fmt.Errorf("waitroom: load script: %w", err)
		}
	}
	return nil
}
