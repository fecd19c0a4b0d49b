package dev.idempotency.sample;

import java.math.BigDecimal;

import org.springframework.data.jpa.repository.JpaRepository;
import org.springframework.data.jpa.repository.Modifying;
import org.springframework.data.jpa.repository.Query;

interface AccountRepository extends JpaRepository<Account, String> {

	/**
	 * Debit an account: not idempotent by itself, a second run debits twice.
	 * @param id the account
	 * @param amount the amount
	 * @return the number of accounts debited (0 when there is no such account)
	 */
	@Modifying(flushAutomatically = true, clearAutomatically = true)
	@Query("update Account a set a.balance = a.balance - :amount where a.id = :id")
	int debit(String id, BigDecimal amount);

}
