package stock

import (
	"fmt"

	"github.com/flashsale-dev/flashsale/pkg/config"
)

// root is the start of every Redis key and channel a flashsale process
// names: "fs:" for the default deployment, "fs:<name>:" for a named one
// (FLASHSALE_DEPLOYMENT). Two deployments that share one Redis (a staging
// pipeline beside production, a left-over demo beside a test run) then
// share no key: not an item's stock, not its buyers, not the gate's lease.
// Item keys keep their hash tag after the root ("fs:staging:{item:7}:"), so
// a Cluster places them as before.
var root = "fs:"

// ValidDeployment reports whether name may name a deployment ("" is the
// default deployment, whose keys are today's): the rule of
// FLASHSALE_DEPLOYMENT (config.ValidDeployment), one for keys and topics.
func ValidDeployment(name string) bool { return config.ValidDeployment(name) }

// KeyRoot is the root of deployment name's keys.
func KeyRoot(name string) string {
	if name == "" {
		return "fs:"
	}
	return "fs:" + name + ":"
}

// UseDeployment makes every key and channel this process names belong to
// deployment name. Each command calls it once at start-up, after its
// settings are read and before any key is named; nothing changes it after.
func UseDeployment(name string) error {
	if !ValidDeployment(name) {
		return fmt.Errorf("stock: deployment name %q (expected 1-32 of a-z 0-9 -, not starting or ending with -)", name)
	}
	root = KeyRoot(name)
	return nil
}

// Root is the root of this process's keys: "fs:", or "fs:<deployment>:".
func Root() string { return root }
