// Package startup is what a deployable does before it serves: wait for each
// store it needs to answer (logging, never exiting into a crash loop while
// a dependency is down or failing over), then refuse a store that would
// lose or corrupt what flashsale keeps in it, and a schema older than the
// binary needs.
//
// Waiting is the answer to the crash loop: Kubernetes restarts a pod that
// exits with a growing back-off (up to five minutes), so a pod that exits
// while MySQL fails over comes back long after MySQL did, exactly when the
// HPA adds pods. A refusal, on the other hand, is permanent until an
// operator acts, so it stops start-up with one line that says what to do.
//
// It owns no stored state: it reads the stores' server settings and the
// schema_migrations table (through pkg/store, pkg/stock and pkg/migrate) and
// keeps flashsale_dependency_up current (pkg/ops).
//
// Importers: pkg/service, for the long-running deployables, and the setup
// command. It imports pkg/store, pkg/stock, pkg/migrate, pkg/ops and
// pkg/config, never schema (the migrations are handed in as an fs.FS),
// pkg/service, the HTTP layer or a feature package.
package startup
