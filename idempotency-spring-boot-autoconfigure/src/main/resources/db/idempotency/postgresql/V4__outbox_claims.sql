-- Claims of the outbox relay. A claim takes a batch of events and holds their keys, as
-- hashes, in one row of this table until the batch is completed, given back or its lease
-- ends: another claim skips every event whose key a live claim holds. One narrow row per
-- batch replaces a lease written on every event, which rewrote each (payload included)
-- and its index entries.
-- The lease columns of the outbox table stay: events leased there by an earlier version
-- of the relay are still respected until their lease ends.
CREATE TABLE IF NOT EXISTS ${outbox_table}_claims (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    lease_owner VARCHAR(64)  NOT NULL,
    lease_until TIMESTAMPTZ  NOT NULL,
    key_hashes  INTEGER[]    NOT NULL
);
