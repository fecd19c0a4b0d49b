package dev.idempotency.benchmarks;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;
import java.util.stream.Collectors;

/**
 * Looks at the stream thread every 10 ms while it has not passed a record on for more than
 * 100 ms (a stall), and keeps, for each stall, how long it lasted, how much CPU the stream
 * thread used meanwhile (from the sample before the stall, so up to 10 ms more; little:
 * it waited, for the broker, for I/O or for the CPU, which the JVM shares with the other
 * processes of the machine; about all of it: its own work) and what it was doing (its
 * top frames, counted over the samples). The longest stalls, and the one in which the
 * stream thread used the most CPU, are printed as {@code STALL} lines once the scenario
 * is done.
 */
final class StallSampler {

	private static final long PERIOD_MILLIS = 10;

	private static final long STALL_NANOS = 100_000_000L;

	private static final int FRAMES = 10;

	private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

	private final Thread stream;

	private final LongSupplier lastRecordNanos;

	private final List<Stall> stalls = new ArrayList<>();

	private volatile boolean running = true;

	private StallSampler(Thread stream, LongSupplier lastRecordNanos) {
		this.stream = stream;
		this.lastRecordNanos = lastRecordNanos;
	}

	/**
	 * Start sampling the given thread, a daemon thread of its own.
	 * @param stream the stream thread
	 * @param lastRecordNanos when the stream thread last passed a record on (0: not yet in
	 * the measured half)
	 */
	static StallSampler start(Thread stream, LongSupplier lastRecordNanos) {
		StallSampler sampler = new StallSampler(stream, lastRecordNanos);
		Thread thread = new Thread(sampler::run, "stall-sampler");
		thread.setDaemon(true);
		thread.start();
		return sampler;
	}

	private void run() {
		Stall current = null;
		// the stream thread's CPU time at the sample before, taken while it still passed
		// records on: a stall's CPU counts from there (up to one period too early)
		long cpuBefore = THREADS.getThreadCpuTime(this.stream.getId());
		while (this.running) {
			try {
				Thread.sleep(PERIOD_MILLIS);
			}
			catch (InterruptedException ex) {
				return;
			}
			long last = this.lastRecordNanos.getAsLong();
			long now = System.nanoTime();
			long cpu = THREADS.getThreadCpuTime(this.stream.getId());
			if (last == 0 || now - last < STALL_NANOS) {
				current = null;
				cpuBefore = cpu;
				continue;
			}
			if (current == null || current.since != last) {
				current = new Stall(last, cpuBefore);
				synchronized (this.stalls) {
					this.stalls.add(current);
				}
			}
			current.sample(now, cpu, this.stream.getState(), this.stream.getStackTrace());
		}
	}

	/**
	 * Stop sampling and describe the longest stalls, one line each, then the stall in
	 * which the stream thread used the most CPU (its own work, not a wait).
	 */
	List<String> stop(int longest) {
		this.running = false;
		synchronized (this.stalls) {
			List<String> lines = new ArrayList<>(this.stalls.stream()
				.sorted(Comparator.comparingLong(Stall::nanos).reversed())
				.limit(longest)
				.map(Stall::toString)
				.toList());
			this.stalls.stream()
				.max(Comparator.comparingLong(Stall::cpuNanos))
				.ifPresent((busiest) -> lines.add("busiest: " + busiest));
			return lines;
		}
	}

	private static final class Stall {

		private final long since;

		private final long cpuAtStart;

		private volatile long lastSample;

		private volatile long cpuAtLastSample;

		private final Map<String, Integer> states = new HashMap<>();

		private final Map<String, Integer> stacks = new HashMap<>();

		Stall(long since, long cpu) {
			this.since = since;
			this.cpuAtStart = cpu;
		}

		synchronized void sample(long now, long cpu, Thread.State state, StackTraceElement[] stack) {
			this.lastSample = now;
			this.cpuAtLastSample = cpu;
			this.states.merge(state.name(), 1, Integer::sum);
			StringBuilder frames = new StringBuilder();
			for (int i = 0; i < Math.min(FRAMES, stack.length); i++) {
				String type = stack[i].getClassName();
				frames.append(i > 0 ? " < " : "")
					.append(type.substring(type.lastIndexOf('.') + 1))
					.append('.')
					.append(stack[i].getMethodName());
			}
			this.stacks.merge(frames.toString(), 1, Integer::sum);
		}

		long nanos() {
			return this.lastSample - this.since;
		}

		long cpuNanos() {
			return this.cpuAtLastSample - this.cpuAtStart;
		}

		@Override
		public synchronized String toString() {
			String top = this.stacks.entrySet()
				.stream()
				.sorted(Map.Entry.<String, Integer>comparingByValue().reversed())
				.limit(3)
				.map((entry) -> entry.getValue() + "x " + entry.getKey())
				.collect(Collectors.joining(" | "));
			return String.format("at least %.0f ms; stream-thread CPU meanwhile %.0f ms; states %s; %s",
					nanos() / 1e6, cpuNanos() / 1e6, this.states, top);
		}

	}

}
