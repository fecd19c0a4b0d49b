-- The dead events, on an index of their own: the outbox statistics count them (up to a
-- bound) and the dead-letter operations list them here, however many pending events have
-- failed or been held back beside them in the index of blocking events (all of the
-- backlog, after a long broker outage). Dead events are few, and so is the index.
CREATE INDEX IF NOT EXISTS ${outbox_table_name}_dead_idx
    ON ${outbox_table} (id) WHERE status = 'DEAD';
