package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/auth"
	"github.com/flashsale-dev/flashsale/pkg/config"
)

// token prints an HS256 token for one user, signed with the ingress's own
// settings (secret, audience, issuer, lifetime cap, user and role claims,
// admin role), so a token the ingress would refuse cannot be minted by
// mistake.
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
	if in.JWTSecret == "" {
		return fmt.Errorf("token: FLASHSALE_JWT_SECRET is not set (tokens from a JWKS are the identity provider's to mint)")
	}
	role := ""
	if *admin {
		role = cmp.Or(in.JWTAdminRole, auth.RoleAdmin)
	}
	s, err := auth.Sign(in.JWTSecret, *sub, role, *ttl,
		auth.WithAudience(in.JWTAudience), auth.WithIssuer(in.JWTIssuer), auth.WithMaxTTL(in.JWTMaxTTL),
		auth.WithUserClaim(in.JWTUserClaim), auth.WithRoleClaim(in.JWTRoleClaim), auth.WithAdminRole(in.JWTAdminRole))
	if err != nil {
		return fmt.Errorf("token: %w", err)
	}
	_, err = fmt.Fprintln(out, s)
	return err
}
