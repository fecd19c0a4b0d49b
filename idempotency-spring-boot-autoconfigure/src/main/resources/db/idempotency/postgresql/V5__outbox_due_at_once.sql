-- A new event is due at once, whatever the clock. It used to be stamped due at the
-- database's clock_timestamp() when it was written, and the relay claims events due at or
-- before its own now(): after the server's clock stepped back (a time correction, a
-- failover to a standby whose clock is behind), events written before the step waited for
-- the clock to catch up with their stamp. Only a failed event is due at a time, its
-- backoff. Events already written keep their stamp.
ALTER TABLE ${outbox_table} ALTER COLUMN next_attempt_at SET DEFAULT '-infinity';
