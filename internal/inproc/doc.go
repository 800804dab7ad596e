// Package inproc starts the pipeline's own code inside a test, on the local
// stack: the ingress (pkg/httpapi, what the ingress binary serves) behind a
// real HTTP listener, and order writers (pkg/orderwriter), on a database and
// Kafka topics of the test's own and the shared Redis.
//
// The console's, flashsalectl's, the tracing's and bench's tests each wrote
// this set-up out for themselves; it is one here, so a new dependency of the
// ingress is wired once for all of them. Tests that need the binaries
// themselves (kill them, restart them) use faults' and scenarios' process
// harnesses instead.
//
// It imports pkg/httpapi, so pkg/httpapi's own tests cannot use it (they
// import internal/testenv, which is why this is not part of testenv).
package inproc
