package dev.idempotency.sample;

import java.util.List;

import dev.idempotency.Idempotent;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.stereotype.Component;

/**
 * Projects {@link AccountDebited} events into account statements, a batch at a time:
 * {@code @Idempotent} claims the whole batch in one statement and hands this method only
 * the events not projected yet.
 */
@Component
class StatementProjection {

	static final String ID = "statements";

	private final StatementLineRepository lines;

	private final JsonMapper json;

	StatementProjection(StatementLineRepository lines, JsonMapper json) {
		this.lines = lines;
		this.json = json;
	}

	@KafkaListener(id = ID, topics = PaymentListener.ACCOUNT_DEBITED_TOPIC, groupId = "statements", batch = "true")
	@Idempotent
	void onDebits(List<String> messages) {
		this.lines.saveAll(messages.stream().map((message) -> {
			AccountDebited debit = this.json.readValue(message, AccountDebited.class);
			return new StatementLine(debit.paymentId(), debit.account(), debit.amount(), debit.balanceAfter());
		}).toList());
	}

}
