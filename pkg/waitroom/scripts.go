package waitroom

import (
	"context"
	"embed"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/luascript"
)

// The waiting room's own scripts, one file per operation under lua/: taking
// a ticket, moving the gate, a pass of the waitlist's offers (one share of
// it, for a bucketed item), reading a share, and the gate's place in a
// bucketed item's line. They run
// on the buyer's path (a ticket) and the gate's, through stock.Store.Eval.
//
//go:embed lua/*.lua
var luaFS embed.FS

// scripts is every script of lua/, each named once, below.
var scripts = luascript.NewSet(luaFS, "waitroom")

var (
	ticketTakeScript    = scripts.Must("ticket_take.lua")
	gateAdvanceScript   = scripts.Must("gate_advance.lua")
	waitlistOfferScript = scripts.Must("waitlist_offer.lua")
	waitlistReadScript  = scripts.Must("waitlist_read.lua")
	waitlistLineScript  = scripts.Must("waitlist_line.lua")
)

// LoadScripts loads the waiting room's scripts once at start-up (on a
// Cluster, on every shard), so the first tickets do not pay for EVAL. An
// optimisation: NOSCRIPT is handled on every call.
func LoadScripts(ctx context.Context, rdb redis.Scripter) error {
	return scripts.Load(ctx, rdb)
}
