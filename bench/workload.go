package main

import (
	"math/rand/v2"
	"sort"
	"strconv"
)

// Kind says why an attempt is in the plan.
type Kind uint8

// Attempt kinds.
const (
	// First is a buyer's first attempt; it carries an Idempotency-Key.
	First Kind = iota
	// Duplicate is the same buyer clicking again: a new attempt without the
	// key. The server must answer it without a second order (I2).
	Duplicate
	// Replay is the same request again with the same Idempotency-Key (a
	// client retry): the server must return the first answer.
	Replay
)

func (k Kind) String() string {
	switch k {
	case Duplicate:
		return "duplicate"
	case Replay:
		return "replay"
	}
	return "first"
}

// Attempt is one order request of the plan.
type Attempt struct {
	Buyer int // index into the buyers (user id = Buyer + 1)
	Kind  Kind
	// IdemKey is the Idempotency-Key header, "" for none.
	IdemKey string
	// Origin is the index in the plan of the first attempt a replay repeats.
	Origin int
}

// UserID of a buyer index. User ids start at 1: the API refuses 0.
func UserID(buyer int) int64 { return int64(buyer) + 1 }

// Plan is the whole workload, fixed before the attack so every scenario of a
// -compare run sees exactly the same arrivals.
type Plan struct {
	Attempts []Attempt
	// Payers marks the buyers who pay once their order is UNPAID.
	Payers []bool
}

// NewPlan shuffles the buyers' first attempts and places each duplicate and
// replay a little after its buyer's first attempt (up to 200 places later),
// so they arrive while the first one may still be in flight, as real
// double-clicks and retries do.
func NewPlan(buyers int, dup, replay, pay float64, seed int64) Plan {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x666c617368))
	order := rng.Perm(buyers)
	type placed struct {
		pos float64
		a   Attempt
	}
	all := make([]placed, 0, buyers+int(float64(buyers)*(dup+replay))+2)
	for pos, b := range order {
		key := "bench-" + strconv.FormatInt(seed, 10) + "-" + strconv.Itoa(b)
		all = append(all, placed{float64(pos), Attempt{Buyer: b, Kind: First, IdemKey: key}})
		if rng.Float64() < dup {
			all = append(all, placed{float64(pos) + float64(1+rng.IntN(200)) + 0.5, Attempt{Buyer: b, Kind: Duplicate}})
		}
		if rng.Float64() < replay {
			all = append(all, placed{float64(pos) + float64(1+rng.IntN(200)) + 0.25, Attempt{Buyer: b, Kind: Replay, IdemKey: key}})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].pos < all[j].pos })
	p := Plan{Attempts: make([]Attempt, len(all)), Payers: make([]bool, buyers)}
	firstAt := make([]int, buyers)
	for i, pl := range all {
		p.Attempts[i] = pl.a
		if pl.a.Kind == First {
			firstAt[pl.a.Buyer] = i
		}
	}
	for i := range p.Attempts {
		if p.Attempts[i].Kind == Replay {
			p.Attempts[i].Origin = firstAt[p.Attempts[i].Buyer]
		}
	}
	for b := range p.Payers {
		p.Payers[b] = rng.Float64() < pay
	}
	return p
}
