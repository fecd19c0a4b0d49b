-- The ledger decides each payment once: BOOKED (the account debited) or REJECTED (the
-- payment would take the account below zero). PENDING until then.
ALTER TABLE payments
    ADD COLUMN status VARCHAR(16) NOT NULL DEFAULT 'PENDING'
        CONSTRAINT payments_status CHECK (status IN ('PENDING', 'BOOKED', 'REJECTED')),
    ADD COLUMN reason TEXT;

-- the payments booked before this migration
UPDATE payments p SET status = 'BOOKED'
WHERE EXISTS (SELECT 1 FROM ledger_entries l WHERE l.payment_id = p.id);

-- The ledger listener never debits below zero; the database refuses it too. NOT VALID: an
-- account that went below zero before this migration keeps its balance, and can only
-- be debited again once it is back above zero.
ALTER TABLE accounts ADD CONSTRAINT accounts_balance_not_negative CHECK (balance >= 0) NOT VALID;
