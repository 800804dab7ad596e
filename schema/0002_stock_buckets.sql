-- flashsale schema v2: stock buckets (issue 14). One hot item may be split
-- into N buckets, each with its own MySQL stock row, Redis hash tag and Kafka
-- key, so consumer replicas and Redis shards share one item's burst.
-- Statements are separated by plus-statement marker lines (see pkg/migrate).
-- Only syntax both MySQL 8.0+ and MariaDB 10.11 accept: MySQL has no ADD
-- COLUMN IF NOT EXISTS, so a statement here is not re-runnable; pkg/migrate
-- records how far a run got and refuses a half-applied file instead. (The
-- released text used MariaDB's IF NOT EXISTS to the same schema; databases
-- it migrated are adopted.)

-- items.buckets is the item's bucket count. With 1 (the default) the item is
-- exactly what it was before: items.stock is its stock and no item_buckets
-- rows exist. With more, items.stock is 0 and item_buckets holds the stock.
-- One statement for the column and its CHECK, so they come together or not.
ALTER TABLE items
  ADD COLUMN buckets INT NOT NULL DEFAULT 1,
  ADD CONSTRAINT items_buckets_pos CHECK (buckets >= 1);

-- +statement
-- item_buckets: one stock row per bucket of a bucketed item. total_stock is
-- what the bucket answers for: its stock plus the live orders (UNPAID, PAID)
-- attributed to it (orders.bucket MOD items.buckets). A transfer moves stock
-- and total together, so stock + live = total holds per bucket and the
-- buckets' totals add up to items.total_stock.
CREATE TABLE IF NOT EXISTS item_buckets (
  item_id     BIGINT NOT NULL,
  bucket      INT    NOT NULL,
  total_stock INT    NOT NULL,
  stock       INT    NOT NULL,
  PRIMARY KEY (item_id, bucket),
  CONSTRAINT item_buckets_stock_nonneg CHECK (stock >= 0),
  CONSTRAINT item_buckets_stock_le_total CHECK (stock <= total_stock),
  CONSTRAINT item_buckets_bucket_nonneg CHECK (bucket >= 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +statement
-- orders.bucket is the bucket whose stock the order took (the buyer's home
-- bucket when it was admitted); 0 for an unbucketed item.
ALTER TABLE orders ADD COLUMN bucket INT NOT NULL DEFAULT 0;

-- +statement
-- stock_restores.bucket is the bucket the cancelled qty went back to, in
-- MySQL and (by the reaper) in Redis.
ALTER TABLE stock_restores ADD COLUMN bucket INT NOT NULL DEFAULT 0;

-- +statement
-- stock_transfers: one row per move of units between two buckets of an item
-- (pkg/rebalance). The move has three steps in two stores (Redis out of the
-- donor, the MySQL rows, Redis into the recipient); the row says how far it
-- got, so a crash between steps is finished exactly once by the next pass.
--   PLANNED   recorded; the Redis take from the donor may or may not have run
--   MOVED     MySQL moved stock and total; the Redis give may not have run
--   DONE      both stores moved
--   ABANDONED the donor had too little in Redis: nothing moved anywhere
CREATE TABLE IF NOT EXISTS stock_transfers (
  id          BIGINT      NOT NULL AUTO_INCREMENT,
  item_id     BIGINT      NOT NULL,
  from_bucket INT         NOT NULL,
  to_bucket   INT         NOT NULL,
  qty         INT         NOT NULL,
  state       ENUM('PLANNED','MOVED','DONE','ABANDONED') NOT NULL DEFAULT 'PLANNED',
  created_at  DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  updated_at  DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  PRIMARY KEY (id),
  KEY stock_transfers_open (state, item_id),
  CONSTRAINT stock_transfers_qty_pos CHECK (qty >= 1),
  CONSTRAINT stock_transfers_distinct CHECK (from_bucket <> to_bucket)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
