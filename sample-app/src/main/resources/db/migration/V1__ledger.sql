CREATE TABLE accounts (
    id              VARCHAR(64)    PRIMARY KEY,
    currency        CHAR(3)        NOT NULL,
    opening_balance NUMERIC(19, 2) NOT NULL,
    balance         NUMERIC(19, 2) NOT NULL
);

CREATE TABLE payments (
    id              UUID           PRIMARY KEY,
    idempotency_key VARCHAR(200)   NOT NULL UNIQUE,
    account_id      VARCHAR(64)    NOT NULL REFERENCES accounts (id),
    amount          NUMERIC(19, 2) NOT NULL CHECK (amount > 0),
    currency        CHAR(3)        NOT NULL,
    event_id        UUID           NOT NULL,
    created_at      TIMESTAMPTZ    NOT NULL DEFAULT now()
);

-- No unique constraint on payment_id, on purpose: the sample shows that @Idempotent alone
-- keeps one entry per payment (the demo counts them).
CREATE TABLE ledger_entries (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    payment_id    UUID           NOT NULL,
    account_id    VARCHAR(64)    NOT NULL REFERENCES accounts (id),
    amount        NUMERIC(19, 2) NOT NULL,
    balance_after NUMERIC(19, 2) NOT NULL,
    booked_at     TIMESTAMPTZ    NOT NULL DEFAULT now()
);
CREATE INDEX ledger_entries_account ON ledger_entries (account_id, id);
CREATE INDEX ledger_entries_payment ON ledger_entries (payment_id);

CREATE TABLE statement_lines (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    payment_id    UUID           NOT NULL,
    account_id    VARCHAR(64)    NOT NULL,
    amount        NUMERIC(19, 2) NOT NULL,
    balance_after NUMERIC(19, 2) NOT NULL
);
CREATE INDEX statement_lines_payment ON statement_lines (payment_id);

INSERT INTO accounts (id, currency, opening_balance, balance) VALUES
    ('alice', 'EUR', 1000000.00, 1000000.00),
    ('bob',   'EUR', 1000000.00, 1000000.00),
    ('carol', 'EUR', 1000000.00, 1000000.00),
    ('dave',  'USD', 1000000.00, 1000000.00),
    ('erin',  'USD', 1000000.00, 1000000.00);
