package httpapi

// lazy prints as f's result, computed when printed: an argument of a
// testenv.Eventually message shows the state at the deadline, not at the
// call.
type lazy func() string

func (f lazy) String() string { return f() }
