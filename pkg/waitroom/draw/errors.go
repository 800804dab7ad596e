package draw

import "errors"

// ErrCommitment: the transcript's seed does not hash to its commitment.
var ErrCommitment = errors.New("waitroom: seed does not match the commitment")

// ErrArrivals: the transcript's arrival numbers are not 1..n once each, or its
// shuffled count is outside 0..n, or a ticket hash appears twice or is not a
// sha256 in hex.
var ErrArrivals = errors.New("waitroom: malformed tickets")

// ErrOrder: the transcript's order is not the one its seed gives.
var ErrOrder = errors.New("waitroom: order does not follow from the seed")

// ErrNotInTranscript: the buyer's ticket is not in the transcript, or with
// another arrival number.
var ErrNotInTranscript = errors.New("waitroom: ticket not in the transcript")
