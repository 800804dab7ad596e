package ctl

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/flashsale-dev/flashsale/pkg/api"
)

// Item is an item as GET /api/v1/admin/items/{id} answers it.
type Item = api.AdminItemDetail

func itemPath(id string) (string, error) {
	n, err := itemID(id)
	if err != nil {
		return "", err
	}
	return "/api/v1/admin/items/" + strconv.FormatInt(n, 10), nil
}

// onPath is the RunE of a command on the one thing its argument names (an
// item, a dead letter): the argument is checked and made that thing's admin
// path by parse (itemPath, offsetArg) before run, so each such command says
// only what it does with it.
func onPath(parse func(string) (string, error), run func(cmd *cobra.Command, path string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		p, err := parse(args[0])
		if err != nil {
			return err
		}
		return run(cmd, p)
	}
}

// onItem is onPath for a command on the item its ITEM argument names.
func onItem(run func(cmd *cobra.Command, path string) error) func(*cobra.Command, []string) error {
	return onPath(itemPath, run)
}

// getOfItem reads GET of the admin path of the ITEM argument arg, with
// suffix ("/audit", say), into a T; raw is the answer as sent.
func getOfItem[T any](cmd *cobra.Command, o *options, arg, suffix string) (v T, raw []byte, err error) {
	p, err := itemPath(arg)
	if err != nil {
		return v, nil, err
	}
	raw, err = o.get(cmd, p+suffix, nil, &v)
	return v, raw, err
}

// itemID is an ITEM argument: a positive integer, else a usage error.
func itemID(id string) (int64, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 {
		return 0, usageErr("item %q: expected a positive integer id", id)
	}
	return n, nil
}

func itemsCmd(o *options) *cobra.Command {
	c := &cobra.Command{Use: "items", Short: "List, read, create, change, restock and end sale items"}
	c.AddCommand(itemsList(o), itemsGet(o), itemsCreate(o), itemsUpdate(o), itemsEnd(o), itemsStock(o))
	return c
}

func itemsList(o *options) *cobra.Command {
	var limit int
	var after int64
	c := &cobra.Command{
		Use: "list", Short: "List items in id order (a page of --limit after --after)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{"limit": {strconv.Itoa(limit)}}
			if after > 0 {
				q.Set("after", strconv.FormatInt(after, 10))
			}
			var p api.ItemPage
			raw, err := o.get(cmd, "/api/v1/admin/items", q, &p)
			if err != nil {
				return err
			}
			if o.output == "json" {
				return printJSON(cmd.OutOrStdout(), raw)
			}
			rows := make([][]string, 0, len(p.Items))
			for _, it := range p.Items {
				rows = append(rows, []string{strconv.FormatInt(it.ID, 10), it.Name, it.State,
					fmt.Sprintf("%d/%d", it.Stock, it.TotalStock), money(it.PriceCents), strconv.Itoa(it.PerUserLimit),
					strconv.Itoa(it.Buckets), stamp(it.StartsAt), stamp(it.EndsAt)})
			}
			if err := table(cmd.OutOrStdout(), []string{"ID", "NAME", "STATE", "STOCK", "PRICE", "LIMIT", "BUCKETS", "STARTS", "ENDS"}, rows); err != nil {
				return err
			}
			if p.NextAfter != nil {
				fmt.Fprintf(cmd.OutOrStdout(), "more: --after %d\n", *p.NextAfter)
			}
			return nil
		},
	}
	c.Flags().IntVar(&limit, "limit", 100, "items per page (1-1000)")
	c.Flags().Int64Var(&after, "after", 0, "list items with an id above this one")
	return c
}

// completeItems offers the ids of the first 1000 items to the shell.
func completeItems(o *options) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var p api.ItemPage
		if _, err := o.get(cmd, "/api/v1/admin/items", url.Values{"limit": {"1000"}}, &p); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, it := range p.Items {
			out = append(out, cobra.CompletionWithDesc(strconv.FormatInt(it.ID, 10), it.Name+" ("+it.State+")"))
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

func printItem(cmd *cobra.Command, o *options, raw []byte, it Item) error {
	if o.output == "json" {
		return printJSON(cmd.OutOrStdout(), raw)
	}
	kv := [][2]string{{"id", strconv.FormatInt(it.ID, 10)}, {"name", it.Name}, {"state", it.State},
		{"price", money(it.PriceCents)}, {"stock", fmt.Sprintf("%d of %d (MySQL)", it.Stock, it.TotalStock)},
		{"per_user_limit", strconv.Itoa(it.PerUserLimit)}, {"buckets", strconv.Itoa(it.Buckets)},
		{"starts_at", stamp(it.StartsAt)}, {"ends_at", stamp(it.EndsAt)}}
	if it.Queue && it.QueueOpensAt != nil {
		q := fmt.Sprintf("opens %s, %d a second", stamp(*it.QueueOpensAt), it.QueueRate)
		if it.QueueShuffleWindowMs > 0 {
			q += fmt.Sprintf(", drawn until %s after the start in rounds of %s",
				time.Duration(it.QueueShuffleWindowMs)*time.Millisecond, time.Duration(it.QueueRoundMs)*time.Millisecond)
		}
		kv = append(kv, [2]string{"queue", q}, [2]string{"commitment", it.QueueCommitment})
	}
	if it.RedisWarmed != nil {
		r := "not warmed"
		if it.RedisStock != nil {
			r = strconv.FormatInt(*it.RedisStock, 10)
		}
		kv = append(kv, [2]string{"redis_stock", r})
	}
	return fields(cmd.OutOrStdout(), kv)
}

// sendItem sends an item write (body of type ctype) and prints the item it
// answers.
func sendItem(cmd *cobra.Command, o *options, method, path string, body any, ctype string) error {
	var it Item
	raw, err := o.send(cmd, method, path, body, ctype, &it)
	if err != nil {
		return err
	}
	return printItem(cmd, o, raw, it)
}

func itemsGet(o *options) *cobra.Command {
	return &cobra.Command{
		Use: "get ITEM", Short: "One item with every field and Redis' stock", Args: cobra.ExactArgs(1),
		ValidArgsFunction: completeItems(o),
		RunE: func(cmd *cobra.Command, args []string) error {
			it, raw, err := getOfItem[Item](cmd, o, args[0], "")
			if err != nil {
				return err
			}
			return printItem(cmd, o, raw, it)
		},
	}
}

// itemFlags are the ItemInput fields as flags; fields() returns the ones
// given (all, for a create).
type itemFlags struct {
	name             string
	price, stock     int64
	limit, buckets   int
	startsAt, endsAt string
	queue            bool
	queueOpensAt     string
	queueRate        int
	queueWindow      time.Duration
	queueRound       time.Duration
	cmd              *cobra.Command
	nowFunc          func() time.Time
}

func (f *itemFlags) register(c *cobra.Command) {
	f.cmd = c
	fl := c.Flags()
	fl.StringVar(&f.name, "name", "", "item name (1-200 characters)")
	fl.Int64Var(&f.price, "price-cents", 0, "price in cents")
	fl.Int64Var(&f.stock, "stock", 0, "units on sale")
	fl.IntVar(&f.limit, "per-user-limit", 1, "most units one buyer may buy")
	fl.IntVar(&f.buckets, "buckets", 1, "stock buckets (spread a hot item over Redis keys and partitions)")
	fl.StringVar(&f.startsAt, "starts-at", "", "sale start: RFC 3339, now, or a duration from now (+10m, -1h)")
	fl.StringVar(&f.endsAt, "ends-at", "", "sale end: RFC 3339, now, or a duration from now (+1h)")
	fl.BoolVar(&f.queue, "queue", false, "a waiting room: buyers take tickets from --queue-opens-at and are admitted in a committed random order at --queue-rate (--queue=false turns it off before it opens)")
	fl.StringVar(&f.queueOpensAt, "queue-opens-at", "", "when buyers may take tickets, at or before --starts-at: RFC 3339, now, or a duration from now")
	fl.IntVar(&f.queueRate, "queue-rate", 100, "tickets a second the gate admits once the sale starts (1-100000); may change during the sale")
	fl.DurationVar(&f.queueWindow, "queue-shuffle-window", 10*time.Second, "arrivals up to this long after the start are drawn with those before it, not served first come (0 to 10m; 0 = only the tickets taken before the start); fixed once the queue opens")
	fl.DurationVar(&f.queueRound, "queue-round", 0, "split the shuffle window into rounds this long (1s to 10m; default one round, the whole window); fixed once the queue opens")
}

// saleTime reads RFC 3339, "now" or a signed Go duration from now.
func saleTime(flag, v string, now time.Time) (string, error) {
	switch {
	case v == "now":
		return now.UTC().Format(time.RFC3339Nano), nil
	case strings.HasPrefix(v, "+") || strings.HasPrefix(v, "-"):
		d, err := time.ParseDuration(v)
		if err != nil {
			return "", usageErr("--%s %q: expected RFC 3339, now, or a duration such as +1h", flag, v)
		}
		return now.Add(d).UTC().Format(time.RFC3339Nano), nil
	}
	if _, err := time.Parse(time.RFC3339Nano, v); err != nil {
		return "", usageErr("--%s %q: expected RFC 3339 (2026-12-24T18:00:00Z), now, or a duration such as +1h", flag, v)
	}
	return v, nil
}

func (f *itemFlags) body(all bool) (map[string]any, error) {
	now := time.Now()
	b := map[string]any{}
	set := func(flag, key string, v any) {
		if all || f.cmd.Flags().Changed(flag) {
			b[key] = v
		}
	}
	set("name", "name", f.name)
	set("price-cents", "price_cents", f.price)
	set("stock", "stock", f.stock)
	set("per-user-limit", "per_user_limit", f.limit)
	if f.cmd.Flags().Changed("buckets") {
		b["buckets"] = f.buckets
	}
	if f.cmd.Flags().Changed("queue") {
		b["queue"] = f.queue
	}
	if f.cmd.Flags().Changed("queue-rate") {
		b["queue_rate"] = f.queueRate
	}
	if f.cmd.Flags().Changed("queue-shuffle-window") {
		b["queue_shuffle_window_ms"] = f.queueWindow.Milliseconds()
	}
	if f.cmd.Flags().Changed("queue-round") {
		b["queue_round_ms"] = f.queueRound.Milliseconds()
	}
	for _, t := range []struct{ flag, key, v string }{{"starts-at", "starts_at", f.startsAt}, {"ends-at", "ends_at", f.endsAt},
		{"queue-opens-at", "queue_opens_at", f.queueOpensAt}} {
		if !f.cmd.Flags().Changed(t.flag) {
			continue
		}
		s, err := saleTime(t.flag, t.v, now)
		if err != nil {
			return nil, err
		}
		b[t.key] = s
	}
	return b, nil
}

func itemsCreate(o *options) *cobra.Command {
	f := &itemFlags{}
	c := &cobra.Command{
		Use:   "create ITEM --name N --price-cents P --stock S --starts-at T --ends-at T [--per-user-limit L] [--buckets B] [--queue --queue-opens-at T [--queue-rate R] [--queue-shuffle-window D [--queue-round D]]]",
		Short: "Create or replace an item (PUT) and warm Redis for its sale",
		Args:  cobra.ExactArgs(1),
		RunE: onItem(func(cmd *cobra.Command, p string) error {
			b, err := f.body(true)
			if err != nil {
				return err
			}
			return sendItem(cmd, o, http.MethodPut, p, b, "application/json")
		}),
	}
	f.register(c)
	for _, req := range []string{"name", "price-cents", "stock", "starts-at", "ends-at"} {
		_ = c.MarkFlagRequired(req)
	}
	return c
}

func itemsUpdate(o *options) *cobra.Command {
	f := &itemFlags{}
	c := &cobra.Command{
		Use:               "update ITEM [--name N] [--price-cents P] [--stock S] [--per-user-limit L] [--starts-at T] [--ends-at T] [--buckets B] [--queue-rate R]",
		Short:             "Change the fields given (a PATCH: the others stay), validated as a create is",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeItems(o),
		RunE: onItem(func(cmd *cobra.Command, p string) error {
			b, err := f.body(false)
			if err != nil {
				return err
			}
			if len(b) == 0 {
				return usageErr("nothing to change: give at least one of --name, --price-cents, --stock, --per-user-limit, --starts-at, --ends-at, --buckets, --queue, --queue-opens-at, --queue-rate, --queue-shuffle-window, --queue-round")
			}
			return sendItem(cmd, o, http.MethodPatch, p, b, "application/merge-patch+json")
		}),
	}
	f.register(c)
	return c
}

func itemsEnd(o *options) *cobra.Command {
	return &cobra.Command{
		Use:               "end ITEM",
		Short:             "End the sale now: no replica admits a request of it once this returns",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeItems(o),
		RunE: onItem(func(cmd *cobra.Command, p string) error {
			return sendItem(cmd, o, http.MethodPost, p+"/end", nil, "")
		}),
	}
}

func money(cents int64) string { return fmt.Sprintf("%d.%02d", cents/100, cents%100) }

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }
