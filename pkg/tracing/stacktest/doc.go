// Package stacktest holds the tracing test that needs the real stack
// (MySQL, Redis, Kafka): kept out of pkg/tracing so that package's unit
// tests run anywhere.
//
// It has no code of its own and nothing imports it; its tests import
// internal/testenv and the packages they run (pkg/httpapi, pkg/admission,
// pkg/orderwriter, pkg/reap, pkg/stock, pkg/orderlog).
package stacktest
