package dev.idempotency.reliability;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * The client of the workload's HTTP handler ({@link HttpTransfers}): sends the run's HTTP
 * requests, each a transfer with an {@code Idempotency-Key} of its own, evenly over a
 * time, from a few threads, to the workload's processes through {@link NetworkProxy
 * proxies} that drop a share of the responses ({@link NetworkProxy#dropAnswers}).
 * <p>
 * A request whose answer is not definite is sent again, with the same key and body, to
 * the next process, until it is: a connection reset or closed (a dropped response, a
 * killed process), a timeout, a {@code 5xx} (an outage) or a {@code 409} (the key still
 * in progress) is retried after a backoff; a {@code 2xx} whose body names the request
 * (the first answer, or the stored one replayed with {@code Idempotent-Replayed: true})
 * ends it. Any other answer ends it unanswered, as does no definite answer within
 * {@link #GIVE_UP}. Everything it sends is drawn from the seed; which process gets which
 * attempt depends on the moment.
 */
final class HttpTraffic {

	/** The share of the responses the proxies drop. */
	static final double DROP_SHARE = 0.2;

	/** How long a request is retried before it counts as unanswered. */
	static final Duration GIVE_UP = Duration.ofMinutes(6);

	private static final int THREADS = 4;

	/**
	 * Longer than the claim's lock timeout (5 s), which a retry may wait out before its
	 * {@code 409}; shorter than a pause ({@link FaultPlan#PAUSE}), so that a request to a
	 * paused process is retried elsewhere while the paused one holds its claim.
	 */
	private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(8);

	private static final long FIRST_BACKOFF_MILLIS = 200;

	private static final long LONGEST_BACKOFF_MILLIS = 2000;

	private final List<Transfer> requests;

	private final List<URI> targets;

	private final Consumer<String> log;

	private final HttpClient client = HttpClient.newBuilder()
		.version(HttpClient.Version.HTTP_1_1)
		.connectTimeout(Duration.ofSeconds(2))
		.build();

	private final AtomicLong attempts = new AtomicLong();

	private final AtomicLong replayed = new AtomicLong();

	private final AtomicLong inProgress = new AtomicLong();

	private final AtomicLong serverErrors = new AtomicLong();

	private final AtomicLong connectionErrors = new AtomicLong();

	private final List<String> unanswered = new ArrayList<>();

	// attempts sent and not ended, by target
	private final AtomicIntegerArray inFlight;

	private final ExecutorService threads = Executors.newFixedThreadPool(THREADS, (task) -> {
		Thread thread = new Thread(task, "http-client");
		thread.setDaemon(true);
		return thread;
	});

	private volatile long sendStart;

	// when the last request to end ended
	private final AtomicLong lastEnded = new AtomicLong();

	/**
	 * The requests of a run, drawn from the seed.
	 * @param options the run's options: the seed, the accounts and
	 * {@link RunOptions#httpRequests()}
	 * @param ports the proxies' ports, one in front of each workload process
	 * @param log where the client logs the requests that ended unanswered
	 */
	HttpTraffic(RunOptions options, List<Integer> ports, Consumer<String> log) {
		// a random of their own, so that a seed keeps its transfers and payments
		Random random = new Random(options.seed() ^ 0x9E3779B97F4A7C15L);
		List<Transfer> requests = new ArrayList<>(options.httpRequests());
		for (int id = 0; id < options.httpRequests(); id++) {
			int from = random.nextInt(options.accounts());
			int to = (from + 1 + random.nextInt(options.accounts() - 1)) % options.accounts();
			requests.add(new Transfer(id, from, to, 1 + random.nextInt(1000)));
		}
		this.requests = List.copyOf(requests);
		this.targets = ports.stream()
			.map((port) -> URI.create("http://127.0.0.1:" + port + HttpTransfers.PATH))
			.toList();
		this.log = log;
		this.inFlight = new AtomicIntegerArray(Math.max(1, this.targets.size()));
	}

	/**
	 * Return the requests: transfers, each sent with {@link #key} as its key.
	 * @return the requests, by id
	 */
	List<Transfer> requests() {
		return this.requests;
	}

	static String key(Transfer request) {
		return "http-transfer-" + request.id();
	}

	/**
	 * Start sending, the requests due evenly over the given time; see {@link #await}.
	 * @param over the time over which the first attempts are due
	 */
	void start(Duration over) {
		this.sendStart = System.nanoTime();
		long perRequest = over.toNanos() / Math.max(1, this.requests.size());
		AtomicInteger next = new AtomicInteger();
		for (int thread = 0; thread < THREADS; thread++) {
			this.threads.execute(() -> {
				int index;
				while ((index = next.getAndIncrement()) < this.requests.size()) {
					long wait = this.sendStart + index * perRequest - System.nanoTime();
					try {
						if (wait > 0) {
							TimeUnit.NANOSECONDS.sleep(wait);
						}
						send(this.requests.get(index));
						this.lastEnded.accumulateAndGet(System.nanoTime(), Math::max);
					}
					catch (InterruptedException ex) {
						Thread.currentThread().interrupt();
						return;
					}
				}
			});
		}
		this.threads.shutdown();
	}

	/**
	 * Wait until every request ended, answered or not.
	 * @return the client's counts
	 */
	Totals await() throws InterruptedException {
		if (!this.threads.awaitTermination(GIVE_UP.toMinutes() * 2 + 10, TimeUnit.MINUTES)) {
			this.threads.shutdownNow();
		}
		return totals();
	}

	/**
	 * Return how many attempts are in flight to a workload process: sent, and neither
	 * answered nor failed yet.
	 * @param process the process's index among the targets
	 * @return the attempts in flight, 0 without the HTTP handler
	 */
	int inFlight(int process) {
		return (process >= 0 && process < this.targets.size()) ? this.inFlight.get(process) : 0;
	}

	Totals totals() {
		synchronized (this.unanswered) {
			long ended = this.lastEnded.get();
			return new Totals(this.requests.size(), this.attempts.get(), this.replayed.get(), this.inProgress.get(),
					this.serverErrors.get(), this.connectionErrors.get(), this.unanswered.size(),
					(ended == 0) ? 0 : (ended - this.sendStart) / 1_000_000);
		}
	}

	private void send(Transfer transfer) throws InterruptedException {
		HttpRequest.Builder request = HttpRequest.newBuilder()
			.timeout(REQUEST_TIMEOUT)
			.header(HttpTransfers.KEY_HEADER, key(transfer))
			.header("Content-Type", "text/plain")
			.POST(HttpRequest.BodyPublishers.ofString(transfer.value(), StandardCharsets.UTF_8));
		long deadline = System.nanoTime() + GIVE_UP.toNanos();
		long backoff = FIRST_BACKOFF_MILLIS;
		String last = "nothing";
		for (int attempt = 0; System.nanoTime() < deadline; attempt++) {
			this.attempts.incrementAndGet();
			int index = (int) ((transfer.id() + attempt) % this.targets.size());
			try {
				HttpResponse<String> response;
				this.inFlight.incrementAndGet(index);
				try {
					response = this.client.send(request.uri(this.targets.get(index)).build(),
							HttpResponse.BodyHandlers.ofString());
				}
				finally {
					this.inFlight.decrementAndGet(index);
				}
				int status = response.statusCode();
				if (status >= 200 && status < 300) {
					if (response.body().startsWith(transfer.id() + ",")) {
						if (response.headers().firstValue("Idempotent-Replayed").isPresent()) {
							this.replayed.incrementAndGet();
						}
						return;
					}
					unanswered(transfer, status + " with another request's body: " + response.body());
					return;
				}
				if (status == 409) {
					this.inProgress.incrementAndGet();
				}
				else if (status >= 500) {
					this.serverErrors.incrementAndGet();
				}
				else {
					unanswered(transfer, status + " " + response.body());
					return;
				}
				last = Integer.toString(status);
			}
			catch (IOException ex) {
				// a dropped response, a killed process, a timeout: the outcome is unknown
				this.connectionErrors.incrementAndGet();
				last = ex.toString();
			}
			Thread.sleep(backoff);
			backoff = Math.min(LONGEST_BACKOFF_MILLIS, backoff * 2);
		}
		unanswered(transfer, "no definite answer in " + GIVE_UP + ", the last: " + last);
	}

	private void unanswered(Transfer transfer, String why) {
		synchronized (this.unanswered) {
			this.unanswered.add(key(transfer));
		}
		this.log.accept("HTTP request " + key(transfer) + " unanswered: " + why);
	}

	/**
	 * What the client did.
	 * @param requests unique requests, each with a key of its own
	 * @param attempts requests sent, first attempts and retries
	 * @param replayed definite answers that were a stored response replayed
	 * @param inProgress {@code 409} answers: the key was in progress elsewhere
	 * @param serverErrors {@code 5xx} answers
	 * @param connectionErrors attempts that ended without an answer: a connection reset or
	 * closed (a dropped response, a killed process) or refused, or a timeout
	 * @param unanswered requests that got no definite answer, or a wrong one
	 * @param millis from the start of the sending until the last request ended
	 */
	record Totals(long requests, long attempts, long replayed, long inProgress, long serverErrors,
			long connectionErrors, long unanswered, long millis) {

		/**
		 * Return the attempts after the first of each request.
		 * @return the retries
		 */
		long retries() {
			return this.attempts - this.requests;
		}

	}

}
