// Package deploy checks the deployment files against the code: Docker cannot
// run on our machines, so compose.yaml is kept honest by parsing it.
//
// Besides compose.yaml its tests check the Kubernetes manifests, the alert
// rules and the dashboard against the metric names, the scripts, the README
// and docs/ (links, the layout's list of packages).
//
// It has no code outside its tests and nothing imports it. Its tests import
// deploy/monitoringgen, internal/testenv and the packages whose names and
// settings they check (pkg/config, pkg/httpapi, pkg/ops and the workers'
// metrics).
package deploy
