package draw

// Held is a ticket as the server holds it: its id (which only its owner and
// the server know; the transcript shows Hash(ID)), its arrival number, and
// whether it was taken before starts_at.
type Held struct {
	ID      string
	Arrival int64
	Early   bool
}

// Line returns tickets in serving order, as Order ranks their hashes: the
// early ones by rank under seed, then the rest by arrival. Position i+1 of
// the result is the ticket's place in line. pkg/waitroom's ServingLine is
// its one caller: the ingress answers positions from it and the gate offers
// released units down it, so both serve one order.
func Line(seed Seed, tickets []Held) []Held {
	entries := make([]Entry, len(tickets))
	byHash := make(map[string]Held, len(tickets))
	var shuffled int64
	for i, t := range tickets {
		h := Hash(t.ID)
		entries[i] = Entry{Ticket: h, Arrival: t.Arrival}
		byHash[h] = t
		if t.Early {
			shuffled = max(shuffled, t.Arrival)
		}
	}
	out := make([]Held, 0, len(tickets))
	for _, e := range Order(seed, entries, shuffled) {
		out = append(out, byHash[e.Ticket])
	}
	return out
}
