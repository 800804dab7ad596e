package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/flashsale-dev/flashsale/pkg/store"
)

// The baselines' own tables, in their own database (-baseline-db) and
// prefixed "baseline_", so a comparison never touches flashsale's tables.
// UNIQUE (user_id, item_id) is there as in flashsale; the stock column has no
// CHECK on purpose: a broken lock must show up as negative stock in the
// audit, not be hidden by an error.
var baselineSchema = []string{
	`CREATE TABLE IF NOT EXISTS baseline_items (
  id             BIGINT       NOT NULL,
  name           VARCHAR(200) NOT NULL,
  price_cents    BIGINT       NOT NULL,
  total_stock    INT          NOT NULL,
  stock          INT          NOT NULL,
  per_user_limit INT          NOT NULL DEFAULT 1,
  version        BIGINT       NOT NULL DEFAULT 0,
  PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
	`CREATE TABLE IF NOT EXISTS baseline_orders (
  id         BIGINT      NOT NULL AUTO_INCREMENT,
  request_id VARCHAR(64) CHARACTER SET ascii NOT NULL,
  user_id    BIGINT      NOT NULL,
  item_id    BIGINT      NOT NULL,
  qty        INT         NOT NULL,
  status     ENUM('UNPAID','PAID','CANCELLED') NOT NULL DEFAULT 'UNPAID',
  idem_key   VARCHAR(128) NULL,
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  paid_at    DATETIME(3) NULL,
  PRIMARY KEY (id),
  UNIQUE KEY baseline_orders_request (request_id),
  UNIQUE KEY baseline_orders_user_item (user_id, item_id),
  KEY baseline_orders_item (item_id, status)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
}

// OpenBaselineDB creates the baselines' database if needed, opens a pool of
// maxOpen connections on it and creates the tables. dsn is flashsale's DSN
// (as config.Common.DSN returns it); only the database name changes.
func OpenBaselineDB(ctx context.Context, dsn, dbName string, maxOpen int) (*sql.DB, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("bench: baseline dsn: %w", err)
	}
	cfg.DBName = ""
	admin, err := store.Open(ctx, cfg.FormatDSN(), 1, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("bench: baseline mysql: %w", err)
	}
	_, err = admin.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+dbName+" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
	admin.Close()
	if err != nil {
		return nil, fmt.Errorf("bench: create database %s: %w", dbName, err)
	}
	cfg.DBName = dbName
	db, err := store.Open(ctx, cfg.FormatDSN(), maxOpen, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("bench: baseline mysql %s: %w", dbName, err)
	}
	for _, q := range baselineSchema {
		if _, err := db.ExecContext(ctx, q); err != nil {
			db.Close()
			return nil, fmt.Errorf("bench: baseline schema: %w", err)
		}
	}
	if err := addVersionColumn(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// addVersionColumn gives a baseline database created before baseline (c)
// its version column. MySQL 8 has no ADD COLUMN IF NOT EXISTS (MariaDB
// has), so the column is looked up first; a second bench adding it at the
// same moment gets 1060 (duplicate column), which is success too.
func addVersionColumn(ctx context.Context, db *sql.DB) error {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.COLUMNS
 WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'baseline_items' AND COLUMN_NAME = 'version'`).Scan(&n); err != nil {
		return fmt.Errorf("bench: baseline schema: look up version column: %w", err)
	}
	if n > 0 {
		return nil
	}
	_, err := db.ExecContext(ctx, "ALTER TABLE baseline_items ADD COLUMN version BIGINT NOT NULL DEFAULT 0")
	var me *mysql.MySQLError
	if err != nil && !(errors.As(err, &me) && me.Number == 1060) {
		return fmt.Errorf("bench: baseline schema: add version column: %w", err)
	}
	return nil
}
