package config

import (
	"flag"
	"fmt"
)

// ServerChecks says what a deployable does when a store it connects to is
// of a kind that would lose or corrupt what flashsale keeps in it: a Redis
// older than 7.0 or with an eviction policy other than noeviction, a MySQL
// older than 8.0.16 or a MariaDB older than 10.6.0 (CHECK constraints parsed
// but not enforced, or no FOR UPDATE SKIP LOCKED). Managed services are where
// these traps are found.
type ServerChecks struct {
	// Mode is "enforce" (refuse to start, naming the server and the
	// setting to change) or "warn" (log the finding and go on: the
	// operator's decision, for a server they cannot reconfigure yet).
	Mode string
}

// RegisterFlags implements Registerer.
func (s *ServerChecks) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&s.Mode, "server-checks", "enforce", "what an unfit Redis or MySQL server does to start-up: enforce (refuse) or warn (log and go on)")
}

// Validate implements Registerer.
func (s *ServerChecks) Validate() error {
	switch s.Mode {
	case "enforce", "warn":
		return nil
	}
	return fmt.Errorf("FLASHSALE_SERVER_CHECKS: %q (expected enforce or warn)", s.Mode)
}

// Enforce reports whether an unfit server stops start-up.
func (s ServerChecks) Enforce() bool { return s.Mode != "warn" }
