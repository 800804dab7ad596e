// Package buildinfo says which flashsale a process is: its version, the
// commit it was built from and the Go that built it. Every deployable prints
// it for -version, logs it at start-up and exports it as the
// flashsale_build_info gauge, so a dashboard shows which replicas run what
// during a rolling upgrade.
//
// It owns Version and Revision (set at link time, else read from what the Go
// toolchain stamped into the binary) and the flashsale_build_info gauge
// (Collector).
//
// Importers: pkg/config (for -version) and pkg/ops (the gauge in every
// deployable's registry). It imports no other package of the module, which it
// must keep to: both of its importers sit under nearly every other package.
package buildinfo
