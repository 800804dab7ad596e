// Command flashsalectl is flashsale's operator CLI (pkg/ctl): items, audits,
// a live sale view and the dead-letter topic over the ingress's admin API,
// and local-development tokens. flashsalectl --help lists the commands.
package main

import (
	"os"

	"github.com/flashsale-dev/flashsale/pkg/ctl"
)

func main() {
	os.Exit(ctl.Main(os.Args[1:], ctl.Env{Stdout: os.Stdout, Stderr: os.Stderr}))
}
