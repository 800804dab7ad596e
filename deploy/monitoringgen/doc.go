// Package monitoringgen writes the Kubernetes monitoring objects that have
// a source elsewhere in deploy/: the PrometheusRule from
// prometheus/alerts.yml (the rules compose and make run load) and the
// Grafana sidecar's dashboard ConfigMap from grafana/dashboards. One source
// each, so the cluster's alerts and dashboard cannot drift from the ones the
// promtool tests and compose exercise; deploy/k8s_monitoring_test.go
// regenerates them and fails on any difference.
//
// It owns no state: it reads deploy/'s files and writes the generated files of
// deploy/k8s/monitoring. Importers: its command (cmd/monitoringgen) and
// deploy's tests. It imports no package of the module, only the Kubernetes and
// Prometheus Operator types, so those never reach a deployable.
package monitoringgen
