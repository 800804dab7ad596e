package draw

import "errors"

// The errors of the rounds scheme (version 2). The transcript checks also
// return ErrCommitment, ErrArrivals, ErrOrder and ErrNotInTranscript (errors.go),
// which mean the same there as for a version 1 transcript.

// ErrVersion: the transcript is not of the version this code checks.
var ErrVersion = errors.New("waitroom: unknown transcript version")

// ErrRounds: the rounds are not numbered 0, 1, ... or do not cover contiguous
// arrival numbers from 1, or a round's root, beacon or seed is malformed.
var ErrRounds = errors.New("waitroom: malformed rounds")

// ErrRoot: a round's root is not the Merkle root of the tickets listed in it:
// a ticket was added, removed, changed or moved to another round after the
// root was published.
var ErrRoot = errors.New("waitroom: round root does not match its tickets")

// ErrRoundSeed: a round's seed is not the one derived from the server seed
// and the round.
var ErrRoundSeed = errors.New("waitroom: round seed does not follow from the seed")

// ErrProof: an inclusion proof does not lead from the ticket to the root.
var ErrProof = errors.New("waitroom: inclusion proof does not verify")

// ErrReceipt: a receipt is malformed, or holds a field that cannot be signed.
var ErrReceipt = errors.New("waitroom: malformed receipt")

// ErrSignature: a receipt's signature does not verify under the key, or the
// key is not an Ed25519 key.
var ErrSignature = errors.New("waitroom: receipt signature does not verify")
