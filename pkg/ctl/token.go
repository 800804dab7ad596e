package ctl

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/flashsale-dev/flashsale/pkg/devtoken"
)

func tokenCmd(o *options) *cobra.Command {
	var sub int64
	var admin bool
	var ttl time.Duration
	c := &cobra.Command{
		Use:   "token [--admin] [--sub N] [--ttl 2h]",
		Short: "Mint a token for a local stack (signed with its FLASHSALE_JWT_SECRET)",
		Long: `Mints an HS256 bearer token with the stack's own secret and claim settings
(FLASHSALE_JWT_SECRET, FLASHSALE_JWT_AUDIENCE, _ISSUER, _MAX_TTL, _USER_CLAIM,
_ROLE_CLAIM, _ADMIN_ROLE; pkg/devtoken, the code the contract run's fuzzprep uses).

It is the one command that does not call the admin API, on purpose: an API
that minted tokens would let whoever reaches it make themselves admin, so the
ingress only ever verifies them. Signing needs the secret itself, which only a
local set-up hands to its operator (eval "$(deploy/local/stack.sh env)").
With a JWK Set (FLASHSALE_JWT_JWKS_URL) it refuses: tokens are then the
identity provider's to issue.

  export FLASHSALE_TOKEN=$(flashsalectl token --admin)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in, err := devtoken.Settings(o.env.Lookup)
			if err != nil {
				return fmt.Errorf("token: %w", err)
			}
			tok, err := devtoken.Mint(in, sub, admin, ttl)
			if err != nil {
				return fmt.Errorf("token: %w", err)
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), tok)
			return err
		},
	}
	c.Flags().Int64Var(&sub, "sub", 1, "user id")
	c.Flags().BoolVar(&admin, "admin", false, "carry the admin role (FLASHSALE_JWT_ADMIN_ROLE)")
	c.Flags().DurationVar(&ttl, "ttl", 2*time.Hour, "lifetime, at most FLASHSALE_JWT_MAX_TTL")
	return c
}
