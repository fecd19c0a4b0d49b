package dev.idempotency.reliability;

/**
 * A transfer of an amount between two accounts, as the producer sends it: the record
 * value is {@code id,from,to,amount} and the record key the source account.
 *
 * @param id the transfer's id; its idempotency key is {@code transfer-<id>}
 * @param from the account debited
 * @param to the account credited
 * @param amount the amount moved
 */
record Transfer(long id, int from, int to, long amount) {

	static Transfer parse(String value) {
		String[] parts = value.split(",");
		if (parts.length != 4) {
			throw new IllegalArgumentException("Not a transfer: " + value);
		}
		return new Transfer(Long.parseLong(parts[0]), Integer.parseInt(parts[1]), Integer.parseInt(parts[2]),
				Long.parseLong(parts[3]));
	}

	String key() {
		return "transfer-" + this.id;
	}

	String value() {
		return this.id + "," + this.from + "," + this.to + "," + this.amount;
	}

}
