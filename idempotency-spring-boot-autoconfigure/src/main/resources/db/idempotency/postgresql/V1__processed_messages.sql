-- Keys of processed messages. A row is inserted in the same transaction as the
-- listener's work; the primary key makes a second claim of a key a no-op.
CREATE TABLE IF NOT EXISTS ${processed_messages_table} (
    consumer_group  VARCHAR(255) NOT NULL,
    idempotency_key VARCHAR(255) NOT NULL,
    topic           VARCHAR(249),
    partition       INTEGER,
    record_offset   BIGINT,
    processed_at    TIMESTAMPTZ  NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer_group, idempotency_key)
);

-- Retention deletes by age.
CREATE INDEX IF NOT EXISTS ${processed_messages_table_name}_processed_at_idx
    ON ${processed_messages_table} (processed_at);
