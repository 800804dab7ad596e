package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

func TestCheckServerAcceptsTheStacksMariaDB(t *testing.T) {
	db, _ := testenv.MySQL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := store.CheckServer(ctx, db); err != nil {
		t.Fatalf("the local stack's MariaDB 10.11 refused: %v", err)
	}
}
