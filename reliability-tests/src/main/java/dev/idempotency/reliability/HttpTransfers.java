package dev.idempotency.reliability;

import dev.idempotency.Idempotent;

import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;

/**
 * The workload's HTTP handler: {@code POST /transfers} with a transfer as its body
 * ({@code id,from,to,amount}, {@code text/plain}) applies it with the {@link Ledger}, in
 * the transaction of the request, and publishes its event through the outbox. In two
 * variants that differ only in {@code @Idempotent}: the one under test (transactional
 * mode, keyed by the {@code Idempotency-Key} header, which the starter carries into the
 * event's id), and the negative control, which applies every request it gets.
 * <p>
 * The handler works for {@value #WORK_MILLIS} ms after its updates, before it answers, as
 * a handler with more to do would. The response, {@code 201} with
 * {@code id,sequence,worker}, names the request, so that the client can tell that an answer
 * is its own.
 */
final class HttpTransfers {

	static final String PATH = "/transfers";

	static final String KEY_HEADER = "Idempotency-Key";

	/**
	 * How long the handler works after its updates, in its transaction: the time in which
	 * a kill meets a request whose effect is written and not committed.
	 */
	private static final long WORK_MILLIS = 20;

	private HttpTransfers() {
	}

	private static ResponseEntity<String> created(Ledger ledger, String key, String body)
			throws InterruptedException {
		Transfer transfer = Transfer.parse(body.trim());
		long sequence = ledger.applyRequest(transfer, key);
		Thread.sleep(WORK_MILLIS);
		return ResponseEntity.status(201)
			.contentType(MediaType.TEXT_PLAIN)
			.body(transfer.id() + "," + sequence + "," + ledger.worker());
	}

	@RestController
	static class IdempotentHandler {

		private final Ledger ledger;

		IdempotentHandler(Ledger ledger) {
			this.ledger = ledger;
		}

		@PostMapping(path = PATH, consumes = MediaType.TEXT_PLAIN_VALUE)
		@Idempotent
		public ResponseEntity<String> transfer(@RequestHeader(KEY_HEADER) String key, @RequestBody String body)
				throws InterruptedException {
			return created(this.ledger, key, body);
		}

	}

	@RestController
	static class PlainHandler {

		private final Ledger ledger;

		PlainHandler(Ledger ledger) {
			this.ledger = ledger;
		}

		@PostMapping(path = PATH, consumes = MediaType.TEXT_PLAIN_VALUE)
		@Transactional
		public ResponseEntity<String> transfer(@RequestHeader(KEY_HEADER) String key, @RequestBody String body)
				throws InterruptedException {
			return created(this.ledger, key, body);
		}

	}

}
