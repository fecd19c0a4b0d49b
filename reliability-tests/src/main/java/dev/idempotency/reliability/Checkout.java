package dev.idempotency.reliability;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.time.Duration;
import java.util.UUID;

import dev.idempotency.Idempotent;
import dev.idempotency.IdempotencyContext;

import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;

/**
 * The checkout's handlers. {@code POST /orders} (transactional mode) writes an order in
 * the starter's transaction; {@code POST /payments} (lease mode) calls the
 * {@link PaymentProvider} with its fencing token. Each records its run in
 * {@code handler_runs}, committed at once, then holds while a file named after its
 * idempotency key exists in the hold directory: the window in which a test kills the
 * process. Responses name the process that made them, so that a replay shows it is the
 * stored response.
 */
@RestController
class Checkout {

	/**
	 * The lease of {@code POST /payments}: longer than a restart of the process (13 to 22 s
	 * seen on a 2-vCPU machine busy with other builds), so that a test can retry while the
	 * lease of a request that died with the process is still live.
	 */
	static final String PAYMENT_LEASE = "30s";

	static final String SCHEMA = """
			CREATE TABLE orders (id UUID PRIMARY KEY, idempotency_key TEXT NOT NULL, item TEXT NOT NULL,
			    pid BIGINT NOT NULL);
			CREATE TABLE handler_runs (handler TEXT NOT NULL, idempotency_key TEXT NOT NULL, pid BIGINT NOT NULL,
			    fencing_token BIGINT, started_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp())""";

	private static final long PID = ProcessHandle.current().pid();

	private static final Duration LONGEST_HOLD = Duration.ofMinutes(2);

	private final JdbcTemplate jdbc;

	private final PaymentProvider provider;

	private final TransactionTemplate ownTransaction;

	private final Path holds;

	Checkout(JdbcTemplate jdbc, PaymentProvider provider, PlatformTransactionManager transactionManager, Path holds) {
		this.jdbc = jdbc;
		this.provider = provider;
		this.ownTransaction = new TransactionTemplate(transactionManager);
		this.ownTransaction.setPropagationBehavior(TransactionDefinition.PROPAGATION_REQUIRES_NEW);
		this.holds = holds;
	}

	@GetMapping("/pid")
	long pid() {
		return PID;
	}

	@PostMapping("/orders")
	@Idempotent
	ResponseEntity<OrderView> order(@RequestHeader("Idempotency-Key") String key, @RequestBody OrderBody body)
			throws InterruptedException {
		UUID id = UUID.randomUUID();
		// in the transaction of the claim: commits with the stored response, or not at all
		this.jdbc.update("INSERT INTO orders (id, idempotency_key, item, pid) VALUES (?, ?, ?, ?)", id, key,
				body.item(), PID);
		recordRun("order", key, null);
		holdWhileHeld(key);
		return ResponseEntity.created(URI.create("/orders/" + id)).body(new OrderView(id, body.item(), PID));
	}

	@PostMapping("/payments")
	@Idempotent(mode = Idempotent.Mode.LEASE, lease = PAYMENT_LEASE)
	ResponseEntity<PaymentView> pay(@RequestHeader("Idempotency-Key") String key, @RequestBody PaymentBody body)
			throws InterruptedException, SQLException {
		long token = IdempotencyContext.fencingToken();
		recordRun("payment", key, token);
		boolean accepted = this.provider.charge(key, token, body.amount());
		holdWhileHeld(key);
		return ResponseEntity.status(201).body(new PaymentView(UUID.randomUUID(), body.amount(), token, accepted, PID));
	}

	// in a transaction of its own: a test sees the run while the handler's transaction is open
	private void recordRun(String handler, String key, Long fencingToken) {
		this.ownTransaction.executeWithoutResult((status) -> this.jdbc.update(
				"INSERT INTO handler_runs (handler, idempotency_key, pid, fencing_token) VALUES (?, ?, ?, ?)", handler,
				key, PID, fencingToken));
	}

	private void holdWhileHeld(String key) throws InterruptedException {
		if (!key.matches("[A-Za-z0-9-]+")) {
			return;
		}
		Path hold = this.holds.resolve(key);
		long deadline = System.nanoTime() + LONGEST_HOLD.toNanos();
		while (Files.exists(hold) && System.nanoTime() < deadline) {
			Thread.sleep(20);
		}
	}

	record OrderBody(String item) {
	}

	record OrderView(UUID id, String item, long pid) {
	}

	record PaymentBody(long amount) {
	}

	record PaymentView(UUID id, long amount, long fencingToken, boolean accepted, long pid) {
	}

}
