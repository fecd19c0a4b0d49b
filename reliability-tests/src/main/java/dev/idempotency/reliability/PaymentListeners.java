package dev.idempotency.reliability;

import dev.idempotency.Idempotent;
import dev.idempotency.IdempotencyContext;

import java.time.Duration;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.kafka.annotation.KafkaListener;

/**
 * The workload's lease-mode listener, whose effect is outside the database's transaction:
 * a charge at the payment provider ({@link ChargeStore}), made with the claim's fencing
 * token. In two variants that differ only in {@code @Idempotent}: the one under test, and
 * the negative control, which charges with token 0 every time it is called.
 * <p>
 * A record with the {@link #STALL_HEADER} header stalls before its charge, past its lease,
 * as a consumer in a long GC pause or behind a slow downstream would; the producer sends
 * its duplicate to another partition, whose consumer takes the key over once the lease
 * expired and charges first. The stalled consumer's charge then meets the fence, and its
 * completion finds the lease lost.
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

	static final String STALL_HEADER = "X-Stall";

	/**
	 * The longest a record with {@link #STALL_HEADER} stalls: it stalls until the provider
	 * has accepted a charge of its payment with a larger token (its duplicate's consumer
	 * took the key over once the lease expired, and charged), or for this long.
	 */
	static final Duration STALL = Duration.ofSeconds(60);

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
		public void on(ConsumerRecord<String, String> payment) throws InterruptedException {
			long token = IdempotencyContext.fencingToken();
			stallIfAsked(this.provider, payment, token);
			charge(this.provider, Payment.parse(payment.value()), token);
		}

	}

	static class PlainPayments {

		private final ChargeStore provider;

		PlainPayments(ChargeStore provider) {
			this.provider = provider;
		}

		@KafkaListener(id = "payments", topics = TOPIC, groupId = GROUP)
		public void on(ConsumerRecord<String, String> payment) throws InterruptedException {
			stallIfAsked(this.provider, payment, 0);
			charge(this.provider, Payment.parse(payment.value()), 0);
		}

	}

	private static void stallIfAsked(ChargeStore provider, ConsumerRecord<String, String> record, long fencingToken)
			throws InterruptedException {
		if (record.headers().lastHeader(STALL_HEADER) == null) {
			return;
		}
		Payment payment = Payment.parse(record.value());
		logger.warn("Stalling {} with fencing token {} before its charge", payment.key(), fencingToken);
		long start = System.nanoTime();
		long deadline = start + STALL.toNanos();
		while (provider.highestToken(payment) <= fencingToken && System.nanoTime() < deadline) {
			Thread.sleep(500);
		}
		logger.warn("Stalled {} for {} ms; the provider's highest token for it is {}", payment.key(),
				(System.nanoTime() - start) / 1_000_000, provider.highestToken(payment));
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
