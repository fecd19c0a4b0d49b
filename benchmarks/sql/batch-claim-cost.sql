-- Where the time of an @Idempotent batch goes, on the database side: the claim of 470
-- keys (one multi-row INSERT ... ON CONFLICT DO NOTHING RETURNING, as the JDBC store
-- sends it) against the business insert of the same 470 rows (as scenario D sends it).
-- Run with: psql -X -f benchmarks/sql/batch-claim-cost.sql <database>
\timing off
DROP TABLE IF EXISTS bench_claims, bench_rows;
CREATE TABLE bench_claims (
    consumer_group  VARCHAR(255) COLLATE "C" NOT NULL,
    idempotency_key VARCHAR(255) COLLATE "C" NOT NULL,
    topic           VARCHAR(249),
    partition       INTEGER,
    record_offset   BIGINT,
    processed_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer_group, idempotency_key));
CREATE INDEX ON bench_claims USING brin (processed_at);
CREATE TABLE bench_rows (id BIGSERIAL PRIMARY KEY, message_key TEXT NOT NULL, payload TEXT NOT NULL);

-- warm up, then measure ten batches of each
DO $$
DECLARE
    claim_ms double precision := 0;
    insert_ms double precision := 0;
    started timestamptz;
    keys varchar[];
BEGIN
    FOR round IN 1..20 LOOP
        keys := ARRAY(SELECT 'run-' || round || '-' || g FROM generate_series(1, 470) g ORDER BY 1);
        started := clock_timestamp();
        INSERT INTO bench_claims (consumer_group, idempotency_key, topic, partition, record_offset, processed_at)
        SELECT 'bench', k, 'bench-topic', 0, o, now()
        FROM unnest(keys, ARRAY(SELECT g::bigint FROM generate_series(1, 470) g)) AS b (k, o)
        ON CONFLICT (consumer_group, idempotency_key) DO NOTHING;
        IF round > 10 THEN claim_ms := claim_ms + extract(epoch FROM clock_timestamp() - started) * 1000; END IF;
        started := clock_timestamp();
        INSERT INTO bench_rows (message_key, payload)
        SELECT k, '{"payment":"' || k || '","filler":"' || repeat('x', 160) || '"}' FROM unnest(keys) k;
        IF round > 10 THEN insert_ms := insert_ms + extract(epoch FROM clock_timestamp() - started) * 1000; END IF;
    END LOOP;
    RAISE NOTICE 'per batch of 470: claim % ms, business insert % ms', round((claim_ms / 10)::numeric, 2), round((insert_ms / 10)::numeric, 2);
END $$;
DROP TABLE bench_claims, bench_rows;
