-- flashsale schema v8: the audit reads an item's restores by the item.
-- Statements are separated by plus-statement marker lines (see
-- pkg/migrate). Only syntax both MySQL 8.0+ and MariaDB 10.11 accept.

-- stock_restores_item: the audit's check "a restore whose order is not
-- cancelled" (pkg/audit readChecks) selects an item's restores; with only
-- stock_restores_pending (redis_applied_at, item_id) it scanned the whole
-- table, one row per cancelled order of every sale ever, each time the
-- live auditor checked an open item (722,310 rows a check on the
-- development stack). InnoDB builds a secondary index in place, without
-- blocking writes to the table.
ALTER TABLE stock_restores
  ADD KEY stock_restores_item (item_id)
