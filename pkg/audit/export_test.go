package audit

import "context"

// SetAfterCut makes f run between an audit's Redis cut and its MySQL
// snapshot (with the item audited), until the returned func restores the
// default. Not for parallel tests: the hook is the package's.
func SetAfterCut(f func(ctx context.Context, itemID int64)) (restore func()) {
	testHookAfterCut = f
	return func() { testHookAfterCut = func(context.Context, int64) {} }
}

// SetMaxCutReservations sets how many pending reservations a bucket's cut
// reads in its transaction, until the returned func restores it.
func SetMaxCutReservations(n int) (restore func()) {
	was := maxCutReservations
	maxCutReservations = n
	return func() { maxCutReservations = was }
}
