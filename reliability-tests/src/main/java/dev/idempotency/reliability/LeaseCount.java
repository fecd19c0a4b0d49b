package dev.idempotency.reliability;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What the lease-mode listener's effect store ({@link ChargeStore}) recorded, counted per
 * payment against what the starter promises in lease mode: every payment charged (none
 * lost), at most once per fencing token (a claim runs the method once), and fenced (no
 * charge accepted with a token below one the store saw before it). A payment charged under
 * two tokens is not a violation: a crash or a pause between the charge and the completion
 * runs the charge again after the lease, under the new owner's larger token, as the
 * README's lease section says. Those are counted as reruns, and the calls the fence
 * turned away as fenced.
 *
 * @param payments payments sent
 * @param appliedOnce payments charged exactly once
 * @param reruns payments charged under more than one token, never twice under one
 * @param appliedTwice payments charged twice under one token: a violation
 * @param lost payments never charged: a violation
 * @param fenced calls rejected by the fence, their token below one the store had seen
 * @param fenceViolations charges accepted with a token below one the store had seen for
 * the payment before: a violation (the store's fence is off or broken)
 */
record LeaseCount(long payments, long appliedOnce, long reruns, long appliedTwice, long lost, long fenced,
		long fenceViolations) {

	/**
	 * A call to the effect store.
	 * @param payment the payment's id
	 * @param fencingToken the caller's token
	 * @param accepted whether the store accepted it
	 */
	record Call(long payment, long fencingToken, boolean accepted) {

	}

	/**
	 * Count the calls of a run.
	 * @param payments the ids of the payments sent
	 * @param calls every call to the store, in the order the store took them
	 * @return the counts
	 */
	static LeaseCount of(Collection<Long> payments, List<Call> calls) {
		Map<Long, List<Call>> byPayment = new HashMap<>();
		for (Call call : calls) {
			byPayment.computeIfAbsent(call.payment(), (payment) -> new ArrayList<>()).add(call);
		}
		long once = 0;
		long reruns = 0;
		long twice = 0;
		long lost = 0;
		long fenced = 0;
		long fenceViolations = 0;
		for (long payment : payments) {
			long accepted = 0;
			boolean sameTokenTwice = false;
			long highestSeen = Long.MIN_VALUE;
			Set<Long> acceptedTokens = new HashSet<>();
			for (Call call : byPayment.getOrDefault(payment, List.of())) {
				if (!call.accepted()) {
					fenced++;
					continue;
				}
				accepted++;
				sameTokenTwice |= !acceptedTokens.add(call.fencingToken());
				if (call.fencingToken() < highestSeen) {
					fenceViolations++;
				}
				highestSeen = Math.max(highestSeen, call.fencingToken());
			}
			if (accepted == 0) {
				lost++;
			}
			else if (sameTokenTwice) {
				twice++;
			}
			else if (accepted == 1) {
				once++;
			}
			else {
				reruns++;
			}
		}
		return new LeaseCount(payments.size(), once, reruns, twice, lost, fenced, fenceViolations);
	}

	/** No lease-mode listener, nothing to count. */
	static LeaseCount none() {
		return new LeaseCount(0, 0, 0, 0, 0, 0, 0);
	}

	List<String> violations() {
		List<String> violations = new ArrayList<>();
		if (this.appliedTwice > 0) {
			violations.add(this.appliedTwice + " payments charged twice under one fencing token");
		}
		if (this.lost > 0) {
			violations.add(this.lost + " payments never charged");
		}
		if (this.fenceViolations > 0) {
			violations.add(this.fenceViolations + " charges accepted with a token below one seen before");
		}
		return violations;
	}

}
