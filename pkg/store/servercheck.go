package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrServerUnfit marks a MySQL server that answers but does not keep the
// guarantees the schema relies on (errors.Is).
var ErrServerUnfit = errors.New("mysql server unfit for flashsale")

// CheckServer asks MySQL for its version and refuses one that parses the
// schema's CHECK constraints without enforcing them: MySQL before 8.0.16
// and MariaDB before 10.2.1. Those constraints (stock >= 0, stock <= total,
// qty >= 1) are the last guard against an oversell that a bug let through;
// on such a server the migrations succeed and the guard silently is not
// there. flashsale is tested on MariaDB 10.11 (and its SQL parsed by a
// MySQL 8 grammar); what passes here is what that promises.
func CheckServer(ctx context.Context, db *sql.DB) error {
	var v string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&v); err != nil {
		return fmt.Errorf("store: SELECT VERSION(): %w", err)
	}
	return checkVersion(v)
}

func checkVersion(v string) error {
	nums := strings.SplitN(strings.SplitN(v, "-", 2)[0], ".", 4)
	parsed := [3]int{}
	for i := 0; i < 3; i++ {
		if i >= len(nums) {
			return fmt.Errorf("%w: version %q is not major.minor.patch", ErrServerUnfit, v)
		}
		n, err := strconv.Atoi(nums[i])
		if err != nil {
			return fmt.Errorf("%w: version %q is not major.minor.patch", ErrServerUnfit, v)
		}
		parsed[i] = n
	}
	min, kind := [3]int{8, 0, 16}, "MySQL"
	if strings.Contains(strings.ToLower(v), "mariadb") {
		min, kind = [3]int{10, 2, 1}, "MariaDB"
	}
	for i := range parsed {
		if parsed[i] != min[i] {
			if parsed[i] > min[i] {
				return nil
			}
			return fmt.Errorf("%w: %s %s does not enforce CHECK constraints (stock >= 0, the last guard against an oversell); need %s %d.%d.%d or later",
				ErrServerUnfit, kind, v, kind, min[0], min[1], min[2])
		}
	}
	return nil
}
