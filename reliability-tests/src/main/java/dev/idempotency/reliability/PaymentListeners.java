package dev.idempotency.reliability;

import dev.idempotency.Idempotent;
import dev.idempotency.IdempotencyContext;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.kafka.annotation.KafkaListener;

/**
 * The workload's lease-mode listener, whose effect is outside the database's transaction:
 * a charge at the payment provider ({@link ChargeStore}), made with the claim's fencing
 * token. In two variants that differ only in {@code @Idempotent}: the one under test, and
 * the negative control, which charges with token 0 every time it is called.
 */
final class PaymentListeners {

	static final String TOPIC = "payments";

	static final String GROUP = "gateway";

	/**
	 * Shorter than a pause of the fault plan ({@link FaultPlan#PAUSE}), so that a paused
	 * process's claim is taken over while it is stopped: its late charge then meets the
	 * fence.
	 */
	static final String LEASE = "8s";

	/** How long the provider takes to answer, each way: a paused call is likely in flight. */
	private static final long LATENCY_MILLIS = 5;

	private static final Logger logger = LoggerFactory.getLogger(PaymentListeners.class);

	private PaymentListeners() {
	}

	static class IdempotentPayments {

		private final ChargeStore provider;

		IdempotentPayments(ChargeStore provider) {
			this.provider = provider;
		}

		@KafkaListener(id = "payments", topics = TOPIC, groupId = GROUP)
		@Idempotent(mode = Idempotent.Mode.LEASE, lease = LEASE)
		public void on(String payment) throws InterruptedException {
			charge(this.provider, Payment.parse(payment), IdempotencyContext.fencingToken());
		}

	}

	static class PlainPayments {

		private final ChargeStore provider;

		PlainPayments(ChargeStore provider) {
			this.provider = provider;
		}

		@KafkaListener(id = "payments", topics = TOPIC, groupId = GROUP)
		public void on(String payment) throws InterruptedException {
			charge(this.provider, Payment.parse(payment), 0);
		}

	}

	private static void charge(ChargeStore provider, Payment payment, long fencingToken) throws InterruptedException {
		Thread.sleep(LATENCY_MILLIS);
		if (!provider.charge(payment, fencingToken)) {
			logger.warn("Charge of {} with fencing token {} rejected: a newer claim charged it", payment.key(),
					fencingToken);
		}
		Thread.sleep(LATENCY_MILLIS);
	}

}
