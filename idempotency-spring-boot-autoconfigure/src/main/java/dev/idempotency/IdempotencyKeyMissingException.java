package dev.idempotency;

/**
 * Thrown when a record carries no idempotency key and the missing-key policy is
 * {@code reject}. The record is not processed; spring-kafka's error handler decides what
 * happens to it (for example, publishing it to a dead-letter topic). Register this
 * exception as not retryable on the error handler, since a retry cannot produce a key.
 */
public class IdempotencyKeyMissingException extends RuntimeException {

	private static final long serialVersionUID = 1L;

	private final String topic;

	private final int partition;

	private final long offset;

	public IdempotencyKeyMissingException(String topic, int partition, long offset, String listener) {
		super("Record " + topic + "-" + partition + "@" + offset + " delivered to " + listener
				+ " has no idempotency key and idempotency.missing-key=reject");
		this.topic = topic;
		this.partition = partition;
		this.offset = offset;
	}

	public String getTopic() {
		return this.topic;
	}

	public int getPartition() {
		return this.partition;
	}

	public long getOffset() {
		return this.offset;
	}

}
