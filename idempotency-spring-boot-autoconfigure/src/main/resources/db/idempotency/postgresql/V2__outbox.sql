-- Events written in the business transaction and published by the relay after commit.
-- Column names follow Debezium's outbox conventions where they overlap: aggregate_id is
-- the Kafka record key, and id orders the events.
CREATE TABLE IF NOT EXISTS ${outbox_table} (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id        UUID         NOT NULL,
    aggregate_type  VARCHAR(255),
    aggregate_id    VARCHAR(255) COLLATE "C",
    type            VARCHAR(255),
    topic           VARCHAR(249) NOT NULL,
    payload         BYTEA        NOT NULL,
    headers         JSONB        NOT NULL DEFAULT '{}',
    created_at      TIMESTAMPTZ  NOT NULL DEFAULT clock_timestamp(),
    status          VARCHAR(16)  NOT NULL DEFAULT 'PENDING',
    attempts        INTEGER      NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ  NOT NULL DEFAULT clock_timestamp(),
    last_error      TEXT,
    lease_owner     VARCHAR(64),
    lease_until     TIMESTAMPTZ,
    sent_at         TIMESTAMPTZ
);

-- The relay's scan for due events.
CREATE INDEX IF NOT EXISTS ${outbox_table_name}_pending_idx
    ON ${outbox_table} (id) WHERE status = 'PENDING';

-- The per-key order check: does an older event of the same key block this one? Only
-- events that are dead, have failed or been held back before (last_error is set), or are
-- leased can block, so only those are indexed: the check stays cheap however long the
-- backlog of a key is.
CREATE INDEX IF NOT EXISTS ${outbox_table_name}_blocking_idx
    ON ${outbox_table} (aggregate_id, id)
    WHERE status = 'DEAD' OR (status = 'PENDING' AND (last_error IS NOT NULL OR lease_owner IS NOT NULL));

-- The purge of sent events kept for a retention period.
CREATE INDEX IF NOT EXISTS ${outbox_table_name}_sent_idx
    ON ${outbox_table} (sent_at) WHERE status = 'SENT';
