package draw

// Held is a ticket as the server holds it: its id (which only its owner and
// the server know; the transcript shows Hash(ID)) and its arrival number.
// LineRounds orders them; pkg/waitroom's ServingLine is its one caller, so
// the ingress's positions and the gate's waitlist follow one order.
type Held struct {
	ID      string
	Arrival int64
}
