package orderwriter

import "errors"

// errRace is returned by an item transaction that lost a unique-key race
// (another replica after a rebalance, the reaper voiding, the ingress aborting
// at the same moment). The transaction is rolled back and retried at once: the
// next attempt sees the winner's decision and skips the request.
var errRace = errors.New("orderwriter: lost a unique-key race")
