-- The migrations of a test application with Flyway migrations of its own.
CREATE TABLE orders (
    id    BIGINT PRIMARY KEY,
    total NUMERIC(12, 2) NOT NULL
);
