-- Keys of processed messages. A row is inserted in the same transaction as the
-- listener's work; the primary key makes a second claim of a key a no-op.
-- Keys are compared byte-wise (COLLATE "C"): only equality matters, and it is cheaper
-- than the database's linguistic collation on every index insert.
CREATE TABLE IF NOT EXISTS ${processed_messages_table} (
    consumer_group  VARCHAR(255) COLLATE "C" NOT NULL,
    idempotency_key VARCHAR(255) COLLATE "C" NOT NULL,
    topic           VARCHAR(249),
    partition       INTEGER,
    record_offset   BIGINT,
    processed_at    TIMESTAMPTZ  NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer_group, idempotency_key)
);

-- Retention deletes by age. Rows arrive in processed_at order, so a BRIN index finds old
-- rows as well as a B-tree would, at a fraction of the cost per insert.
CREATE INDEX IF NOT EXISTS ${processed_messages_table_name}_processed_at_idx
    ON ${processed_messages_table} USING brin (processed_at);
