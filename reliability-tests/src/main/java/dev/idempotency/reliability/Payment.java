package dev.idempotency.reliability;

/**
 * A payment to charge at the payment provider, as the producer sends it to the lease-mode
 * listener: the record value is {@code id,account,amount} and the record key the account.
 *
 * @param id the payment's id; its idempotency key is {@code payment-<id>}
 * @param account the account charged
 * @param amount the amount charged
 */
record Payment(long id, int account, long amount) {

	static Payment parse(String value) {
		String[] parts = value.split(",");
		if (parts.length != 3) {
			throw new IllegalArgumentException("Not a payment: " + value);
		}
		return new Payment(Long.parseLong(parts[0]), Integer.parseInt(parts[1]), Long.parseLong(parts[2]));
	}

	String key() {
		return "payment-" + this.id;
	}

	String value() {
		return this.id + "," + this.account + "," + this.amount;
	}

}
