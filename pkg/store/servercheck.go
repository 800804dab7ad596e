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

// CheckServer asks MySQL for its version and refuses one the pipeline
// cannot rely on: MySQL before 8.0.16 and MariaDB before 10.6.0. Two
// features set the floor. The schema's CHECK constraints (stock >= 0,
// stock <= total, qty >= 1) are the last guard against an oversell that a
// bug let through; a server that parses them without enforcing them (MySQL
// before 8.0.16, MariaDB before 10.2.1) runs the migrations and silently
// has no guard. FOR UPDATE SKIP LOCKED (the reaper's sweep, the order
// writers' stock locks) came in MySQL 8.0.1 and MariaDB 10.6.0: MariaDB
// 10.2.1-10.5 passed the CHECK floor and then failed at the first sweep.
// flashsale is tested on MariaDB 10.11 (and its SQL parsed by a MySQL 8
// grammar, with no MySQL 8 server run); what passes here is what that
// promises.
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
		min, kind = [3]int{10, 6, 0}, "MariaDB"
	}
	for i := range parsed {
		if parsed[i] != min[i] {
			if parsed[i] > min[i] {
				return nil
			}
			return fmt.Errorf("%w: %s %s lacks what flashsale needs (enforced CHECK constraints, the last guard against an oversell, and FOR UPDATE SKIP LOCKED); need %s %d.%d.%d or later",
				ErrServerUnfit, kind, v, kind, min[0], min[1], min[2])
		}
	}
	return nil
}
