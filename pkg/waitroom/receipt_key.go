package waitroom

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/waitroom/draw"
)

// receiptKeys holds the deployment's Ed25519 key that signs ticket
// receipts (docs/fairness.md). It lives in MySQL (receipt_keys, one row):
// the first replica that needs it draws it from crypto/rand and INSERT
// IGNOREs it, and every replica reads the row that stands, so all sign
// with one key and nobody configures a secret. Read once, then kept.
type receiptKeys struct {
	mu   sync.Mutex
	priv ed25519.PrivateKey
}

// key is the deployment's receipt key, read (or made) on first use.
func (k *receiptKeys) key(ctx context.Context, db store.Querier) (ed25519.PrivateKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.priv != nil {
		return k.priv, nil
	}
	seed := make([]byte, ed25519.SeedSize)
	if _, err := rand.Read(seed); err != nil {
		return nil, fmt.Errorf("waitroom: receipt key: %w", err)
	}
	if _, err := db.ExecContext(ctx, "INSERT IGNORE INTO receipt_keys (id, seed) VALUES (1, ?)", seed); err != nil {
		return nil, fmt.Errorf("waitroom: receipt key: %w", err)
	}
	var stored []byte
	if err := db.QueryRowContext(ctx, "SELECT seed FROM receipt_keys WHERE id = 1").Scan(&stored); err != nil {
		return nil, fmt.Errorf("waitroom: receipt key: %w", err)
	}
	if len(stored) != ed25519.SeedSize {
		return nil, fmt.Errorf("waitroom: receipt key: %d bytes stored, want %d", len(stored), ed25519.SeedSize)
	}
	k.priv = ed25519.NewKeyFromSeed(stored)
	return k.priv, nil
}

// ReceiptKey is the public half of the deployment's receipt key, as
// /.well-known/flashsale-receipt-key serves it. ErrUnavailable when MySQL
// cannot be read before the key ever was.
func (r *Room) ReceiptKey(ctx context.Context) (api.ReceiptKey, error) {
	priv, err := r.receiptKey(ctx)
	if err != nil {
		return api.ReceiptKey{}, err
	}
	pub := priv.Public().(ed25519.PublicKey)
	return api.ReceiptKey{Algorithm: "Ed25519", KeyID: draw.KeyID(pub), PublicKey: hex.EncodeToString(pub)}, nil
}

func (r *Room) receiptKey(ctx context.Context) (ed25519.PrivateKey, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.StoreTimeout)
	defer cancel()
	priv, err := r.receipts.key(ctx, r.db)
	if err != nil {
		r.log.WarnContext(ctx, "queue: receipt key", "err", err)
		return nil, fmt.Errorf("receipt key: %w", ErrUnavailable)
	}
	return priv, nil
}
