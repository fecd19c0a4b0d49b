CREATE TABLE order_lines (
    order_id BIGINT NOT NULL REFERENCES orders (id),
    line     INTEGER NOT NULL,
    PRIMARY KEY (order_id, line)
);
