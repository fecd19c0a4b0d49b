package dev.idempotency.sample;

import java.math.BigDecimal;

import org.springframework.data.jpa.repository.JpaRepository;
import org.springframework.data.jpa.repository.Modifying;
import org.springframework.data.jpa.repository.Query;

interface AccountRepository extends JpaRepository<Account, String> {

	/**
	 * Debit an account, unless it holds less than the amount: not idempotent by itself, a
	 * second run debits twice.
	 * @param id the account
	 * @param amount the amount
	 * @return the number of accounts debited: 0 when there is no such account, or when
	 * the debit would take it below zero
	 */
	@Modifying(flushAutomatically = true, clearAutomatically = true)
	@Query("update Account a set a.balance = a.balance - :amount where a.id = :id and a.balance >= :amount")
	int debit(String id, BigDecimal amount);

}
