package dev.idempotency;

/**
 * The starter's exceptions, as an error handler needs to know them.
 */
public final class IdempotencyExceptions {

	private IdempotencyExceptions() {
	}

	/**
	 * Return the starter's exceptions that retrying cannot cure: a missing key under
	 * {@code missing-key: reject}, a fingerprint mismatch, a claim marked failed, a result
	 * that could not be stored (over its size limit, among others). The starter registers
	 * them as not retryable on the {@code DefaultErrorHandler} of each listener container;
	 * register them yourself on a
	 * hand-made handler ({@code handler.addNotRetryableExceptions(IdempotencyExceptions.notRetryable())}).
	 * @return a new array of the exception types
	 */
	@SuppressWarnings("unchecked")
	public static Class<? extends Exception>[] notRetryable() {
		return new Class[] { IdempotencyKeyMissingException.class, IdempotencyFingerprintMismatchException.class,
				IdempotencyClaimFailedException.class, IdempotencyResultNotStoredException.class };
	}

}
