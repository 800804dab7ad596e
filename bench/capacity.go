package main

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
)

// capacityComponent is one component with the processes that are it.
type capacityComponent struct {
	name         string
	sel          procSelector
	singleThread bool
	coLocated    bool
}

// CapacityRun is one calibration or check sale: its answers and the CPU
// seconds each component spent from item creation to the last settled
// order (polls and the consumer's writes included).
type CapacityRun struct {
	Kind      string             `json:"kind"` // "sold-out-heavy", "order-heavy", "check"
	Units     int                `json:"units"`
	Accepted  int                `json:"accepted"`
	SoldOut   int                `json:"sold_out"`
	Polls     int                `json:"polls"`
	Other     int                `json:"other"`
	AttackSec float64            `json:"attack_seconds"`
	WallSec   float64            `json:"wall_seconds"`
	CPU       map[string]float64 `json:"cpu_seconds"`
	// AnswersPerSec is (202s + 410s) ÷ the attack's seconds; Predicted is
	// the model's cores ÷ Σ CPU per answer for the run's mix.
	AnswersPerSec float64 `json:"answers_per_sec"`
	Predicted     float64 `json:"predicted_answers_per_sec,omitempty"`
	ErrorPct      float64 `json:"error_pct,omitempty"`
}

// orderShare is the fraction of the run's answers that were 202s.
func (r CapacityRun) orderShare() float64 {
	if r.Accepted+r.SoldOut == 0 {
		return 0
	}
	return float64(r.Accepted) / float64(r.Accepted+r.SoldOut)
}

// CapacityReport is everything -capacity prints.
type CapacityReport struct {
	Cores           int           `json:"cores"`
	Costs           []Cost        `json:"costs"`
	BytesPerMessage float64       `json:"kafka_bytes_per_message"`
	PollsPerOrder   float64       `json:"polls_per_order"`
	Runs            []CapacityRun `json:"runs"`
	// Calibrations is how many pairs of calibration sales the costs are
	// the medians of (the first 2×Calibrations Runs).
	Calibrations int `json:"calibrations"`
	// CheckMedianErrorPct is the median of the check runs' errors.
	CheckMedianErrorPct float64  `json:"check_median_error_pct"`
	Sizing              Sizing   `json:"sizing"`
	Notes               []string `json:"notes,omitempty"`
}

// capacityComponents resolves the selectors; Redis defaults to the
// process listening on the configured address's port (FLASHSALE_REDIS_URL's
// when set: FLASHSALE_REDIS_ADDR keeps its default beside a URL, and a
// selector built from it measured an idle server at 0 µs; redisProcs), as
// the drain's split does.
func capacityComponents(c config.Common, cs CapacitySettings) []capacityComponent {
	sel := func(s string) procSelector { p, _ := parseProcSelector(s); return p }
	redis := sel(cs.Redis)
	if cs.Redis == "" {
		addr := c.RedisAddr
		if addrs := c.RedisAddrs(); len(addrs) > 0 {
			addr = addrs[0]
		}
		redis = redisProcs(addr)
	}
	return []capacityComponent{
		{name: "ingress", sel: sel(cs.Ingress)},
		{name: "redis", sel: redis, singleThread: true},
		{name: "kafka", sel: sel(cs.Kafka)},
		{name: "consumer", sel: sel(cs.Consumer)},
		{name: "mysql", sel: sel(cs.MySQL)},
		{name: "bench", sel: procSelector{Kind: "self"}, coLocated: true},
	}
}

// RunCapacity calibrates the costs with a sold-out-heavy sale (5% of the
// buyers get a 202) and an order-heavy one (every buyer does), sizes the
// target, then predicts and measures cs.Checks sales of half and half on
// this machine. Every sale long-polls (one status request per order, as a
// client following the API's advice does) and neither pays nor duplicates,
// so a 202's cost is its answer, one poll and its write.
func RunCapacity(ctx context.Context, c config.Common, s Settings, cs CapacitySettings) (CapacityReport, error) {
	comps := capacityComponents(c, cs)
	rep := CapacityReport{Cores: runtime.NumCPU()}
	sale := func(i int, kind string, units int) (CapacityRun, error) {
		return capacitySale(ctx, c, s, cs, comps, i, kind, units)
	}
	// Each pair of calibration sales gives every component a cost per 410
	// and per 202; the cost kept is the median over the pairs, and the
	// spread is reported beside it.
	type pairCosts map[string][2]float64
	var pairs []pairCosts
	var lo, hi CapacityRun
	for k := range max(cs.Calibrations, 1) {
		var err error
		if lo, err = sale(2*k, "sold-out-heavy", max(1, cs.Buyers/20)); err != nil {
			return rep, err
		}
		if hi, err = sale(2*k+1, "order-heavy", cs.Buyers); err != nil {
			return rep, err
		}
		rep.Runs = append(rep.Runs, lo, hi)
		pc := pairCosts{}
		for _, cp := range comps {
			if !cp.sel.measured() {
				continue
			}
			so, or, err := solveCosts(lo.CPU[cp.name], float64(lo.SoldOut), float64(lo.Accepted),
				hi.CPU[cp.name], float64(hi.SoldOut), float64(hi.Accepted))
			if err != nil {
				return rep, fmt.Errorf("capacity: %s: %w", cp.name, err)
			}
			pc[cp.name] = [2]float64{so, or}
		}
		pairs = append(pairs, pc)
	}
	calibrationRuns := len(rep.Runs)
	overrides, _ := parseCostOverrides(cs.Costs)
	for _, cp := range comps {
		cost := Cost{Name: cp.name, SingleThread: cp.singleThread, CoLocatedOnly: cp.coLocated, Source: "not measured"}
		if cp.sel.measured() {
			var sos, ors []float64
			for _, pc := range pairs {
				sos, ors = append(sos, pc[cp.name][0]), append(ors, pc[cp.name][1])
			}
			cost.SoldOut, cost.Order, cost.Measured, cost.Source = median(sos), median(ors), true, "measured"
			cost.SoldOutRange, cost.OrderRange = spread(sos), spread(ors)
		}
		if o, ok := overrides[cp.name]; ok {
			cost.SoldOut, cost.Order, cost.Measured, cost.Source = o[0], o[1], true, "flag"
			cost.SoldOutRange, cost.OrderRange = [2]float64{}, [2]float64{}
		}
		rep.Costs = append(rep.Costs, cost)
	}
	rep.Calibrations = len(pairs)
	for _, c := range rep.Costs {
		if c.Source == "measured" && c.SoldOut == 0 && c.Order == 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: its processes spent no CPU in the calibration sales: the selector likely names no process of the pipeline (a TLS port a process's command line does not show); give -capacity-%s", c.Name, c.Name))
		}
	}
	if hi.Accepted > 0 {
		rep.PollsPerOrder = float64(hi.Polls) / float64(hi.Accepted)
	}
	rep.BytesPerMessage = orderRecordBytes()
	t := cs.Target
	t.BytesPerMessage = rep.BytesPerMessage
	sizing, err := size(rep.Costs, t)
	if err != nil {
		return rep, err
	}
	rep.Sizing = sizing
	for i := range cs.Checks {
		r, err := sale(calibrationRuns+i, "check", cs.Buyers/2)
		if err != nil {
			return rep, err
		}
		rep.Runs = append(rep.Runs, r)
	}
	for i := range rep.Runs {
		r := &rep.Runs[i]
		r.Predicted = predictRate(rep.Costs, r.orderShare(), float64(rep.Cores))
		if r.AnswersPerSec > 0 {
			r.ErrorPct = 100 * (r.Predicted - r.AnswersPerSec) / r.AnswersPerSec
		}
	}
	var errs []float64
	for _, r := range rep.Runs[calibrationRuns:] {
		errs = append(errs, r.ErrorPct)
	}
	if len(errs) > 0 {
		rep.CheckMedianErrorPct = median(errs)
	}
	for _, r := range rep.Runs {
		if r.Other > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s sale: %d answers neither 202 nor 410 (429, 503, errors) cost CPU the model splits over the others", r.Kind, r.Other))
		}
	}
	return rep, nil
}

// capacitySale runs one sale of cs.Buyers buyers over units and reads each
// component's CPU around it. Tokens are minted per sale (distinct expiries,
// so distinct tokens): a real sale's buyers are first seen, and the
// ingress's verified-token cache must not make later sales cheaper.
func capacitySale(ctx context.Context, c config.Common, s Settings, cs CapacitySettings, comps []capacityComponent, i int, kind string, units int) (CapacityRun, error) {
	tokens, err := MintTokens(s.JWTSecret, cs.Buyers, 6*time.Hour+time.Duration(i)*time.Minute)
	if err != nil {
		return CapacityRun{}, err
	}
	s.Buyers, s.Units, s.ItemID = cs.Buyers, units, 0
	s.DupFraction, s.ReplayFraction, s.PayFraction, s.ReapWait = 0, 0, 0, 0
	s.PollWait = max(s.PollWait, 10*time.Second)
	s.Items = max(1, min(s.Items, units))
	s.Quiet = true
	w := Workload{Settings: s, Plan: NewPlan(s.Buyers, 0, 0, 0, s.Seed+int64(i)), Tokens: tokens, Concurrency: cs.Concurrency}
	before := readComponents(comps)
	start := time.Now()
	rep, err := RunScenario(ctx, w, Scenario{Name: "flashsale " + kind, Base: s.Target, Brokers: c.Brokers(), Group: c.ConsumerGroup, Topic: c.OrdersTopic})
	if err != nil {
		return CapacityRun{}, err
	}
	after := readComponents(comps)
	r := CapacityRun{Kind: kind, Units: units, Accepted: rep.Outcome(OutAccepted).Count, SoldOut: rep.Outcome(OutSoldOut).Count,
		Polls: rep.Settle.Polls, AttackSec: rep.AttackSecs, WallSec: time.Since(start).Seconds(), CPU: map[string]float64{}}
	r.Other = rep.All.Count - r.Accepted - r.SoldOut
	if rep.AttackSecs > 0 {
		r.AnswersPerSec = float64(r.Accepted+r.SoldOut) / rep.AttackSecs
	}
	for k, v := range after {
		r.CPU[k] = v - before[k]
	}
	if r.Accepted+r.SoldOut == 0 || !rep.Pass || rep.Settle.Unsettled > 0 {
		return r, fmt.Errorf("capacity: %s sale did not pass its audit (%s)", kind, strings.Join(rep.Checks, "; "))
	}
	slog.Info("capacity sale", "kind", kind, "accepted", r.Accepted, "sold_out", r.SoldOut, "answers_per_s", int(r.AnswersPerSec), "cpu", r.CPU)
	return r, nil
}

// readComponents reads every measured component's CPU seconds now.
func readComponents(comps []capacityComponent) map[string]float64 {
	m := map[string]float64{}
	for _, cp := range comps {
		if cp.sel.measured() {
			m[cp.name] = cp.sel.cpu()
		}
	}
	return m
}

// orderRecordBytes is one order record's key and value as the ingress
// produces it (a typical request id, item, user): the bytes Kafka stores
// per message before its per-record and per-batch framing.
func orderRecordBytes() float64 {
	m := orderlog.OrderMessage{RequestID: reqid.New(1_000_000_000_123, time.Now()), ItemID: 1_000_000_000_123, UserID: 12_345_678, Qty: 1, ReservedMs: time.Now().UnixMilli()}
	v, err := m.Encode()
	if err != nil {
		return 0
	}
	return float64(len(m.Key()) + len(v))
}

// median of xs (0 for none).
// spread is the least and the most of xs.
func spread(xs []float64) [2]float64 {
	if len(xs) == 0 {
		return [2]float64{}
	}
	return [2]float64{slices.Min(xs), slices.Max(xs)}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
