-- flashsale schema v6: the waiting room's rounds and receipts (issue 41).
-- Statements are separated by plus-statement marker lines (see
-- pkg/migrate). Only syntax both MySQL 8.0+ and MariaDB 10.11 accept.

-- shuffle_window_ms: how long after starts_at arrivals are still drawn
-- (in rounds of round_ms each) instead of served first come, first served
-- (docs/fairness.md). 0 for a queue made before this version: only the
-- tickets taken before the start are shuffled, as they were; the admin
-- API gives a new queue the default window.
ALTER TABLE item_queues
  ADD COLUMN shuffle_window_ms INT NOT NULL DEFAULT 0,
  ADD COLUMN round_ms INT NOT NULL DEFAULT 0

-- +statement
-- queue_rounds: one row per closed round of a queued item, written once
-- by the gate when the round's tickets are final (Redis' clock past the
-- round's end) and before anyone orders them: root is the Merkle root of
-- the round's tickets (hash, arrival), which the round's seed is derived
-- from, so nobody can know a rank in the round before this row exists.
CREATE TABLE IF NOT EXISTS queue_rounds (
  item_id     BIGINT      NOT NULL,
  n           INT         NOT NULL,
  first_arrival BIGINT    NOT NULL,
  last_arrival  BIGINT    NOT NULL,
  root        CHAR(64)    NOT NULL,
  closed_at   DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (item_id, n)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin

-- +statement
-- receipt_keys: the deployment's Ed25519 key that signs ticket receipts
-- (docs/fairness.md). One row, id 1, drawn from crypto/rand by the first
-- ingress that needs it (INSERT IGNORE: every replica then reads the same
-- key). seed is the private key's 32-byte seed and is never shown; the
-- public key is served at /.well-known/flashsale-receipt-key.
CREATE TABLE IF NOT EXISTS receipt_keys (
  id          INT         NOT NULL,
  seed        BINARY(32)  NOT NULL,
  created_at  DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
