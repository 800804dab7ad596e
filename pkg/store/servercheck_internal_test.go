package store

import (
	"errors"
	"testing"
)

// TestCheckVersionRefusesServersThatIgnoreCHECK: the floor is what the
// schema's CHECK constraints and the reaper's and writers' FOR UPDATE SKIP
// LOCKED need: MySQL 8.0.16 (SKIP LOCKED since 8.0.1), MariaDB 10.6.0
// (CHECK enforced since 10.2.1, SKIP LOCKED since 10.6.0: 10.2.1-10.5
// passed the check and then failed at the first sweep).
func TestCheckVersionRefusesServersThatIgnoreCHECK(t *testing.T) {
	for v, fit := range map[string]bool{
		"10.11.19-MariaDB-0+deb12u1": true,
		"10.2.1-MariaDB":             false,
		"10.5.27-MariaDB":            false,
		"10.6.0-MariaDB":             true,
		"10.2.0-MariaDB-log":         false,
		"10.1.48-MariaDB":            false,
		"11.4.2-MariaDB":             true,
		"8.4.3":                      true,
		"8.0.16":                     true,
		"8.0.15":                     false,
		"5.7.44-log":                 false,
		"9.1.0":                      true,
		"8.0.28-mysql_aurora":        true,
		"garbage":                    false,
	} {
		err := checkVersion(v)
		if fit != (err == nil) || (err != nil && !errors.Is(err, ErrServerUnfit)) {
			t.Errorf("checkVersion(%q) = %v, want fit=%v", v, err, fit)
		}
	}
}
