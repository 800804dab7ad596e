-- flashsale schema v5: the waiting room's gate and admission grants
-- (issue 25). Statements are separated by plus-statement marker lines (see
-- pkg/migrate). Only syntax both MySQL 8.0+ and MariaDB 10.11 accept.

-- rate: admissions per second the gate (pkg/gate) lets through once the
-- sale starts. grant_key: the secret the ingress signs and checks admission
-- grants with (pkg/grant); drawn from crypto/rand with the queue, never
-- shown, and NULL only for a queue created before this version, which gets
-- one the first time it is needed.
ALTER TABLE item_queues
  ADD COLUMN rate INT NOT NULL DEFAULT 100,
  ADD COLUMN grant_key BINARY(32) NULL
