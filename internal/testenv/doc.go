// Package testenv connects integration tests to the real local stack (make
// stack-up) through the same FLASHSALE_* settings the deployables read, with
// the local stack's addresses as defaults. A missing server fails the test
// with a message saying how to start it; it never skips, except under
// -short (make test-unit), where every helper that reaches a server skips
// the test with its reason (NeedStack).
//
// Every test gets isolation it can't trip over: its own MySQL database
// (migrated), its own Kafka topics and consumer group, and random item ids in
// the shared Redis.
//
// It owns the test side of the stack: the defaults, the per-test databases,
// topics and groups, free addresses, FaultDialer, the log buffers and metric
// readers, the goroutines a test runs beside it (Background) and those
// blocked in a function (GoroutinesIn), the test items several packages
// warm the same way (WarmAt, WarmBuckets) and a buyer of a given bucket
// (UserIn), a catalog's lag with no consumer behind it (NoLag), an optional
// value as a failure message prints it (Deref), the cluster helpers (slots,
// script caches) and the headless browser (Chromium). It imports package
// testing.
//
// Only tests import it (tests of the pkg/ packages, bench, deploy, faults and
// scenarios); no non-test file may, since a deployable that linked it would
// carry the testing package and the test defaults. It imports pkg/config, the
// store clients (pkg/store, pkg/stock, pkg/orderlog), pkg/migrate and schema, to
// build the same clients the deployables build, and never a feature package.
package testenv
