package dev.idempotency.sample;

import org.springframework.data.jpa.repository.JpaRepository;

interface StatementLineRepository extends JpaRepository<StatementLine, Long> {

}
