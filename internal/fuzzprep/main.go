// Command fuzzprep prepares what the API contract run (deploy/contract/run.sh)
// needs from the project's own code, so the script never re-implements it:
//
//	fuzzprep token -sub 7 [-admin] [-ttl 2h]        a bearer token the ingress accepts
//	fuzzprep database NAME                          a fresh, migrated database; prints its DSN
//
// Both read the usual FLASHSALE_* settings (the JWT secret and claims; the
// MySQL DSN) through pkg/config, like the deployables.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: fuzzprep token|database ...")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "token":
		err = token(os.Args[2:], os.Stdout)
	case "database":
		err = database(ctx, os.Args[2:], os.Stdout)
	default:
		err = fmt.Errorf("unknown command %q (want token or database)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fuzzprep:", err)
		os.Exit(1)
	}
}
