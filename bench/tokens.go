package main

import (
	"fmt"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/auth"
)

// adminUserID is the operator the bench acts as for the admin routes.
const adminUserID = 1

// Tokens are the buyers' bearer headers, minted once before the attack so
// signing never competes with sending for the CPU.
type Tokens struct {
	Buyers []string // "Bearer <jwt>" per buyer index
	Admin  string
}

// MintTokens signs one HS256 token per buyer with pkg/auth, the same code
// the ingress verifies with. ttl must outlive the whole run.
func MintTokens(secret string, buyers int, ttl time.Duration) (Tokens, error) {
	t := Tokens{Buyers: make([]string, buyers)}
	for b := range buyers {
		s, err := auth.Sign(secret, UserID(b), "", ttl)
		if err != nil {
			return Tokens{}, fmt.Errorf("bench: token of buyer %d: %w", b, err)
		}
		t.Buyers[b] = "Bearer " + s
	}
	s, err := auth.Sign(secret, adminUserID, auth.RoleAdmin, ttl)
	if err != nil {
		return Tokens{}, fmt.Errorf("bench: admin token: %w", err)
	}
	t.Admin = "Bearer " + s
	return t, nil
}
