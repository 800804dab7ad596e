-- flashsale schema v1. InnoDB, utf8mb4, all times DATETIME(3) in UTC.
-- Statements are separated by plus-statement marker lines (see pkg/migrate).

-- items: one row per sale item. stock is what MySQL still has to sell;
-- total_stock is what the sale started with (I1, I3 are checked against it).
CREATE TABLE IF NOT EXISTS items (
  id             BIGINT       NOT NULL,
  name           VARCHAR(200) NOT NULL,
  price_cents    BIGINT       NOT NULL,
  total_stock    INT          NOT NULL,
  stock          INT          NOT NULL,
  per_user_limit INT          NOT NULL DEFAULT 1,
  starts_at      DATETIME(3)  NOT NULL,
  ends_at        DATETIME(3)  NOT NULL,
  created_at     DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  updated_at     DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  PRIMARY KEY (id),
  CONSTRAINT items_stock_nonneg CHECK (stock >= 0),
  CONSTRAINT items_stock_le_total CHECK (stock <= total_stock),
  CONSTRAINT items_limit_pos CHECK (per_user_limit >= 1),
  CONSTRAINT items_price_nonneg CHECK (price_cents >= 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +statement
-- request_outcomes is the arbiter: exactly one row per admitted request, and
-- whoever inserts it first decides. ORDERED (consumer), REJECTED (consumer:
-- sold_out, duplicate_buyer), ABORTED (ingress: publish_failed), VOIDED
-- (reaper: expired_reservation).
CREATE TABLE IF NOT EXISTS request_outcomes (
  request_id VARCHAR(64) CHARACTER SET ascii NOT NULL,
  item_id    BIGINT      NOT NULL,
  user_id    BIGINT      NOT NULL,
  qty        INT         NOT NULL,
  outcome    ENUM('ORDERED','REJECTED','ABORTED','VOIDED') NOT NULL,
  reason     VARCHAR(32) CHARACTER SET ascii NULL,
  decided_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (request_id),
  KEY request_outcomes_item (item_id, outcome)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +statement
-- orders: one per (user, item) forever (I2); a cancelled order still counts.
CREATE TABLE IF NOT EXISTS orders (
  id           BIGINT      NOT NULL AUTO_INCREMENT,
  request_id   VARCHAR(64) CHARACTER SET ascii NOT NULL,
  user_id      BIGINT      NOT NULL,
  item_id      BIGINT      NOT NULL,
  qty          INT         NOT NULL,
  price_cents  BIGINT      NOT NULL,
  status       ENUM('UNPAID','PAID','CANCELLED') NOT NULL DEFAULT 'UNPAID',
  created_at   DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  expires_at   DATETIME(3) NOT NULL,
  paid_at      DATETIME(3) NULL,
  cancelled_at DATETIME(3) NULL,
  PRIMARY KEY (id),
  UNIQUE KEY orders_request (request_id),
  UNIQUE KEY orders_user_item (user_id, item_id),
  KEY orders_expiry (status, expires_at),
  KEY orders_item_status (item_id, status),
  CONSTRAINT orders_qty_pos CHECK (qty >= 1)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +statement
-- stock_restores: one row per cancelled order, written in the cancelling
-- transaction (MySQL restore) and marked when Redis got the qty back, so a
-- crash in between is repaired by the next reaper pass exactly once (I5).
CREATE TABLE IF NOT EXISTS stock_restores (
  order_id         BIGINT      NOT NULL,
  item_id          BIGINT      NOT NULL,
  qty              INT         NOT NULL,
  created_at       DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  redis_applied_at DATETIME(3) NULL,
  PRIMARY KEY (order_id),
  KEY stock_restores_pending (redis_applied_at, item_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
