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

func mustScript(name string) *redis.Script { return luascript.Must(luaFS, "waitroom", name) }

var (
	ticketTakeScript    = mustScript("ticket_take.lua")
	gateAdvanceScript   = mustScript("gate_advance.lua")
	waitlistOfferScript = mustScript("waitlist_offer.lua")
	waitlistReadScript  = mustScript("waitlist_read.lua")
	waitlistLineScript  = mustScript("waitlist_line.lua")
)

// LoadScripts loads the waiting room's scripts once at start-up (on a
// Cluster, on every shard), so the first tickets do not pay for EVAL. An
// optimisation: NOSCRIPT is handled on every call.
func LoadScripts(ctx context.Context, rdb redis.Scripter) error {
	return luascript.Load(ctx, rdb, "waitroom", ticketTakeScript, gateAdvanceScript, waitlistOfferScript, waitlistReadScript, waitlistLineScript)
}
