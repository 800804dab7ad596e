// Package store is flashsale's MySQL access: files by table family (items
// and item_buckets, request outcomes, orders, stock restores, stock changes,
// stock transfers), a transaction helper and the error classification every
// writer shares.
//
// SQL is kept to what both MySQL 8 and MariaDB 10.11 accept. What is tested:
// every statement is parsed by a MySQL 8 grammar, Vitess's sqlparser
// (internal/sqlgrammar, which finds the statements in the code itself), and
// run on MariaDB 10.11 by this package's integration tests. None is run on a
// MySQL 8 server here: the local stack has none.
//
// Not every statement is here: pkg/rebalance writes the stock_transfers rows
// itself (transfers_sql.go, movesql.go), pkg/waitroom owns item_queues and
// queue_rounds (queue_sql.go, rounds_sql.go; an Item still carries its
// queue's settings, read here by one join), pkg/audit and pkg/auditor read
// with SELECTs of their own, and pkg/migrate keeps schema_migrations.
//
// Nearly every package that touches MySQL imports it: pkg/admission,
// pkg/orderstatus, pkg/orderwriter, pkg/reap, pkg/rebalance, pkg/waitroom,
// pkg/catalog, pkg/stockchange, pkg/audit, pkg/auditor, pkg/httpapi,
// pkg/service, pkg/startup, internal/testenv, internal/fuzzprep and the setup
// and bench commands. It imports nothing of the project, and must never
// import a feature (pkg/waitroom and its draw among them), pkg/config,
// pkg/stock, pkg/orderlog or the HTTP layer: it opens its pool from a DSN
// (Pool) or is handed a *sql.DB, and knows nothing of the other stores.
package store
