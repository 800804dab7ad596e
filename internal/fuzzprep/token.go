package main

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/devtoken"
)

// token prints an HS256 token for one user, made by pkg/devtoken (the code
// flashsalectl token runs too) from the ingress's own settings, parsed here
// as the ingress parses them (flags over FLASHSALE_*), so a token the
// ingress would refuse cannot be minted by mistake. The contract run
// (deploy/contract/run.sh) keeps calling it: its flags are the script's.
func token(args []string, out io.Writer) error {
	var common config.Common
	var in config.Ingress
	fs := flag.NewFlagSet("fuzzprep token", flag.ContinueOnError)
	sub := fs.Int64("sub", 1, "user id")
	admin := fs.Bool("admin", false, "carry the admin role (FLASHSALE_JWT_ADMIN_ROLE)")
	ttl := fs.Duration("ttl", 2*time.Hour, "token lifetime (at most FLASHSALE_JWT_MAX_TTL)")
	if err := config.Parse(fs, args, &common, &in); err != nil {
		return err
	}
	s, err := devtoken.Mint(in.JWT, *sub, *admin, *ttl)
	if err != nil {
		return fmt.Errorf("token: %w", err)
	}
	_, err = fmt.Fprintln(out, s)
	return err
}
