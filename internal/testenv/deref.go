package testenv

// Deref is the value p points to, or nil: an optional field (a pointer that
// JSON leaves nil when absent) as a failure message should print it, its
// value rather than its address.
func Deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
