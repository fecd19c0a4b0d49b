-- Claims of @Idempotent(mode = LEASE) listeners, whose effects are outside the database:
-- the claim commits alone, IN_PROGRESS with a lease and a fencing token, then becomes
-- COMPLETED (or FAILED) only while it still carries its token.
-- Every new column is nullable, so the table is altered in place without a rewrite and
-- the rows of the transactional mode stay as they are: a NULL status means completed.
ALTER TABLE ${processed_messages_table}
    ADD COLUMN IF NOT EXISTS status        VARCHAR(16),
    ADD COLUMN IF NOT EXISTS fencing_token BIGINT,
    ADD COLUMN IF NOT EXISTS lease_until   TIMESTAMPTZ,
    ADD COLUMN IF NOT EXISTS fingerprint   VARCHAR(64),
    ADD COLUMN IF NOT EXISTS result        JSONB,
    ADD COLUMN IF NOT EXISTS failure       TEXT;

-- Fencing tokens: one sequence for the table, so a token only grows, for every key, even
-- across rows deleted by a release or by retention.
CREATE SEQUENCE IF NOT EXISTS ${processed_messages_table}_fencing_seq;
