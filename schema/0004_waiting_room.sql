-- flashsale schema v4: the waiting room (issue 25). An item with a row here
-- has its queue on: buyers take tickets from opens_at on, and the tickets
-- taken before the item's starts_at are served in the order the seed gives
-- (pkg/waitroom). An item without a row behaves exactly as before.
-- Statements are separated by plus-statement marker lines (see pkg/migrate).
-- Only syntax both MySQL 8.0+ and MariaDB 10.11 accept.

-- item_queues: one row per queued item. seed is drawn from crypto/rand when
-- the queue is turned on and never changes while the row exists; commitment
-- is hex(sha256(seed)), shown on the item from then on. The seed itself is
-- shown only from the item's starts_at on.
CREATE TABLE IF NOT EXISTS item_queues (
  item_id     BIGINT      NOT NULL,
  opens_at    DATETIME(3) NOT NULL,
  seed        BINARY(32)  NOT NULL,
  commitment  CHAR(64)    NOT NULL,
  created_at  DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (item_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
