package waitroom

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/lease"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// ErrLeaseClash is a gate refusing to start: its lease is held, and kept
// held, by the gate of another deployment (another database) on the same
// Redis. Without the refusal the two share one lease: whichever holds it
// moves only its own database's items, and the other's queued items admit
// nobody, with nothing said.
var ErrLeaseClash = errors.New("waitroom: the gate's lease is held by another deployment's gate")

// holderOf is the separator between a replica's name and its deployment
// in the gate lease's value: "host-pid-rand of flashsale@20261206T054409.386".
const holderOf = " of "

// deploymentOf names the deployment whose database db is: the database's
// name and the moment its schema was first migrated. Every replica of one
// deployment reads the same (through a Galera writer or a managed
// failover too: it is data, replicated), two setups of their own differ.
func deploymentOf(ctx context.Context, db store.Querier) (string, error) {
	var name string
	var first sql.NullTime
	err := db.QueryRowContext(ctx, "SELECT DATABASE(), MIN(applied_at) FROM schema_migrations").Scan(&name, &first)
	if err != nil {
		return "", fmt.Errorf("waitroom: deployment of the database: %w", err)
	}
	return name + "@" + first.Time.UTC().Format("20060102T150405.000"), nil
}

// deploymentOfHolder is the deployment a lease value names, and false for
// a value without one (a gate of an earlier release).
func deploymentOfHolder(h string) (string, bool) {
	_, dep, ok := strings.Cut(h, holderOf)
	return dep, ok
}

// checkLease returns ErrLeaseClash, naming the holder, when the lease at
// key is held by another deployment's gate and is still held by it once a
// lease TTL has passed: a lease left by a gate that stopped (its TTL runs
// out) is no clash. A holder of an earlier release, which names no
// deployment, is let be: a rolling upgrade must not refuse itself.
func checkLease(ctx context.Context, rdb redis.Cmdable, key, mine string, ttl time.Duration) error {
	other := func() (string, error) {
		h, err := lease.Current(ctx, rdb, key)
		if err != nil {
			return "", err
		}
		if dep, ok := deploymentOfHolder(h); ok && dep != mine {
			return h, nil
		}
		return "", nil
	}
	h, err := other()
	if err != nil || h == "" {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(ttl + ttl/2):
	}
	if h, err = other(); err != nil || h == "" {
		return err
	}
	dep, _ := deploymentOfHolder(h)
	return fmt.Errorf("%w: %s is held by %q, whose database is %s and ours %s: two deployments share this Redis under one name; give each its own FLASHSALE_DEPLOYMENT",
		ErrLeaseClash, key, h, dep, mine)
}
