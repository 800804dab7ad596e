-- flashsale schema v3: restock and withdraw during a sale (issue 26).
-- Statements are separated by plus-statement marker lines (see pkg/migrate).
-- Only syntax both MySQL 8.0+ and MariaDB 10.11 accept.

-- stock_changes: one row per operation that changes an item's stock by a
-- signed delta (POST /api/v1/admin/items/{id}/stock), keyed by the caller's
-- operation id so a retried call finds its first answer. The change has two
-- stores, and the row says how far it got so whoever finds it PENDING
-- (the ingress that took the call, or a reaper's pass) finishes it once:
--   PENDING  restock (delta > 0): MySQL's stock and total_stock already
--            grew by delta, in the transaction that inserted the row; the
--            Redis give (guarded per bucket by the operation id) may or may
--            not have run.
--            withdraw (delta < 0): nothing changed in MySQL yet; the Redis
--            take (guarded, it takes what is free, at most -delta) may or
--            may not have run.
--   APPLIED  both stores changed by applied units (restock: delta;
--            withdraw: minus what Redis had free, 0 to delta).
-- buckets is the item's bucket count when the row was written: a restock's
-- units are spread over them evenly (pkg/stockchange), and a warm, which is
-- the only thing that changes a count, is refused while a change is PENDING.
CREATE TABLE IF NOT EXISTS stock_changes (
  operation_id VARCHAR(64) NOT NULL,
  item_id      BIGINT      NOT NULL,
  delta        INT         NOT NULL,
  buckets      INT         NOT NULL,
  applied      INT         NULL,
  state        ENUM('PENDING','APPLIED') NOT NULL DEFAULT 'PENDING',
  created_at   DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  applied_at   DATETIME(3) NULL,
  PRIMARY KEY (operation_id),
  KEY stock_changes_open (state, created_at),
  KEY stock_changes_item (item_id, state),
  CONSTRAINT stock_changes_delta_nonzero CHECK (delta <> 0),
  CONSTRAINT stock_changes_buckets_pos CHECK (buckets >= 1)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
