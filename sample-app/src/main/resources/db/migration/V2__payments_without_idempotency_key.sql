-- POST /payments is an @Idempotent handler: the starter claims each Idempotency-Key in
-- processed_messages (scope 'http POST /payments') and stores the response with it, so a
-- payment no longer carries its key. Dropping the column drops its unique constraint.
ALTER TABLE payments DROP COLUMN idempotency_key;
