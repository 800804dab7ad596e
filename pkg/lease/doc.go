// Package lease is a Redis lease: one holder at a time of a named right
// (the rebalancer's passes, the waiting room's gate), taken, renewed and
// given up by scripts that compare the holder, so a holder whose lease
// expired and was taken never extends or drops the new holder's
// (lease_test.go). A lease only saves work and keeps one actor in charge:
// whatever it guards must stay correct when two replicas overlap (a paused
// holder wakes after its TTL), and does in both users.
//
// It owns its two scripts (lua/hold.lua, lua/drop.lua) and the value of a
// lease key, the holder's name, with a TTL. The key names are its users':
// fs:rebalance:lease (pkg/rebalance), fs:queue:gate:lease (pkg/waitroom) and,
// in tests, fs:test:script-cache-hold (internal/testenv).
//
// Importers: pkg/rebalance and pkg/waitroom, which hold leases (the waiting
// room also reads the gate's holder, Current, for an operator's view), and
// internal/testenv, whose tests hold a deployment's script cache with it. It
// imports no other package of the module but internal/luascript (how every
// package loads its Lua), and a go-redis client, so it knows nothing of what
// it guards.
package lease
