package dev.idempotency.benchmarks;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;

import org.springframework.kafka.listener.BatchInterceptor;
import org.springframework.kafka.listener.RecordInterceptor;

/**
 * Counts records whose listener invocation returned, and notes when the first record
 * arrived, when half of them were done and when all were. Timing starts at the first
 * record, so the consumer's group join is not measured.
 */
final class Progress implements RecordInterceptor<Object, Object>, BatchInterceptor<Object, Object> {

	private final long expected;

	private final AtomicLong done = new AtomicLong();

	private final CountDownLatch finished = new CountDownLatch(1);

	private volatile long first;

	private volatile long half;

	private volatile long last;

	Progress(long expected) {
		this.expected = expected;
	}

	@Override
	public ConsumerRecord<Object, Object> intercept(ConsumerRecord<Object, Object> record,
			Consumer<Object, Object> consumer) {
		started();
		return record;
	}

	@Override
	public ConsumerRecords<Object, Object> intercept(ConsumerRecords<Object, Object> records,
			Consumer<Object, Object> consumer) {
		started();
		return records;
	}

	@Override
	public void success(ConsumerRecord<Object, Object> record, Consumer<Object, Object> consumer) {
		advance(1);
	}

	@Override
	public void success(ConsumerRecords<Object, Object> records, Consumer<Object, Object> consumer) {
		advance(records.count());
	}

	private void started() {
		if (this.first == 0) {
			this.first = System.nanoTime();
		}
	}

	private void advance(int count) {
		long before = this.done.getAndAdd(count);
		long after = before + count;
		long now = System.nanoTime();
		if (before < this.expected / 2 && after >= this.expected / 2) {
			this.half = now;
		}
		if (after >= this.expected && before < this.expected) {
			this.last = now;
			this.finished.countDown();
		}
	}

	boolean await(long seconds) throws InterruptedException {
		return this.finished.await(seconds, TimeUnit.SECONDS);
	}

	long done() {
		return this.done.get();
	}

	/** Messages per second over the whole run. */
	double rate() {
		return this.expected / ((this.last - this.first) / 1e9);
	}

	/** Messages per second over the first half of the run. */
	double firstHalfRate() {
		return (this.expected / 2) / ((this.half - this.first) / 1e9);
	}

	/** Messages per second over the second half of the run, after JIT warm-up. */
	double steadyRate() {
		return (this.expected - this.expected / 2) / ((this.last - this.half) / 1e9);
	}

}
