-- flashsale schema v7: a bucketed item's waitlist moves units between its
-- buckets (issue 41). Statements are separated by plus-statement marker lines
-- (see pkg/migrate). Only syntax both MySQL 8.0+ and MariaDB 10.11 accept.

-- kind: what a transfer moves between two buckets of an item. STOCK: units
-- of the donor's stock, toward buyers who found their bucket short (the
-- rebalancer's policy). WAITLIST: units of the donor's share of the waitlist
-- (its pool), to the recipient's, for an offer to a buyer whose home is the
-- recipient (the waiting room's gate). Both move the two item_buckets rows
-- alike (MySQL counts the waitlist's units as stock); only the Redis steps
-- differ (pkg/rebalance).
ALTER TABLE stock_transfers
  ADD COLUMN kind ENUM('STOCK','WAITLIST') NOT NULL DEFAULT 'STOCK'
