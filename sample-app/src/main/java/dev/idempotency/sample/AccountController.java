package dev.idempotency.sample;

import java.math.BigDecimal;
import java.time.Instant;
import java.util.List;
import java.util.UUID;

import org.springframework.data.domain.Limit;
import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;
import org.springframework.web.ErrorResponseException;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code GET /accounts/{id}} and {@code GET /ledger/{account}}: the results of the
 * payments.
 */
@RestController
class AccountController {

	private final AccountRepository accounts;

	private final LedgerEntryRepository ledger;

	AccountController(AccountRepository accounts, LedgerEntryRepository ledger) {
		this.accounts = accounts;
		this.ledger = ledger;
	}

	@GetMapping("/accounts/{id}")
	AccountView account(@PathVariable String id) {
		Account account = find(id);
		return new AccountView(account.getId(), account.getCurrency(), account.getOpeningBalance(),
				account.getBalance());
	}

	@GetMapping("/ledger/{account}")
	List<EntryView> ledger(@PathVariable String account, @RequestParam(defaultValue = "50") int limit) {
		find(account);
		return this.ledger.findByAccountOrderByIdDesc(account, Limit.of(Math.max(1, Math.min(limit, 1000))))
			.stream()
			.map((entry) -> new EntryView(entry.getId(), entry.getPaymentId(), entry.getAmount(),
					entry.getBalanceAfter(), entry.getBookedAt()))
			.toList();
	}

	private Account find(String id) {
		return this.accounts.findById(id)
			.orElseThrow(() -> new ErrorResponseException(HttpStatus.NOT_FOUND,
					ProblemDetail.forStatusAndDetail(HttpStatus.NOT_FOUND, "Account '" + id + "' does not exist"),
					null));
	}

	record AccountView(String id, String currency, BigDecimal openingBalance, BigDecimal balance) {
	}

	record EntryView(long id, UUID paymentId, BigDecimal amount, BigDecimal balanceAfter, Instant bookedAt) {
	}

}
