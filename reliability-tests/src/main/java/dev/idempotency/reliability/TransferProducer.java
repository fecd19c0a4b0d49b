package dev.idempotency.reliability;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Sends the run's transfers, each with a unique key in the {@code X-Idempotency-Key}
 * header, and sends a share of them a second time later on, as a producer that retries
 * would; and replays a partition from an old offset, as an operator who resets offsets
 * would. Everything it sends is drawn from the seed. The same goes for the payments of
 * the lease-mode listener, interleaved with the transfers, and for the transfers of the
 * batch listener (see {@link TransferListeners#topic}). Two payments, a third and two
 * thirds of the way, are sent with {@link PaymentListeners#STALL_HEADER} to a partition of
 * their own and, 2 s later, again without it to the partition opposite (which the range
 * assignor gives another consumer whenever there are three or more; see
 * {@link PaymentListeners}); not in the negative control.
 */
final class TransferProducer implements AutoCloseable {

	static final String KEY_HEADER = "X-Idempotency-Key";

	private final List<Transfer> transfers;

	// what to send, in order: a transfer's id, or -(id + 1) for a payment
	private final long[] sends;

	private final List<Payment> payments;

	private final boolean batch;

	private final List<String> topics;

	// the payments that stall, by id
	private final Set<Long> stalls;

	private final ScheduledExecutorService stallDuplicates = Executors.newSingleThreadScheduledExecutor();

	private final KafkaProducer<String, String> producer;

	private final String bootstrapServers;

	private final AtomicLong duplicates = new AtomicLong();

	TransferProducer(RunOptions options, String bootstrapServers) {
		Random random = new Random(options.seed());
		List<Transfer> transfers = new ArrayList<>(options.events());
		for (int id = 0; id < options.events(); id++) {
			int from = random.nextInt(options.accounts());
			int to = (from + 1 + random.nextInt(options.accounts() - 1)) % options.accounts();
			transfers.add(new Transfer(id, from, to, 1 + random.nextInt(1000)));
		}
		this.transfers = List.copyOf(transfers);
		// a re-send goes out a little later than the original: up to a tenth of the run
		List<double[]> order = new ArrayList<>();
		for (int id = 0; id < options.events(); id++) {
			order.add(new double[] { id, id });
			if (random.nextDouble() < options.duplicateShare()) {
				order.add(new double[] { id + 1 + random.nextDouble() * options.events() / 10.0, id });
			}
		}
		order.sort(Comparator.comparingDouble((double[] send) -> send[0]));
		// drawn from a random of their own, so that a seed keeps its transfers
		Random paymentRandom = new Random(options.seed() ^ 0x2545F4914F6CDD1DL);
		List<Payment> payments = new ArrayList<>(options.payments());
		List<double[]> paymentOrder = new ArrayList<>();
		for (int id = 0; id < options.payments(); id++) {
			payments.add(new Payment(id, paymentRandom.nextInt(options.accounts()), 1 + paymentRandom.nextInt(1000)));
			paymentOrder.add(new double[] { id, id });
			if (paymentRandom.nextDouble() < options.duplicateShare()) {
				paymentOrder.add(
						new double[] { id + 1 + paymentRandom.nextDouble() * options.payments() / 10.0, id });
			}
		}
		paymentOrder.sort(Comparator.comparingDouble((double[] send) -> send[0]));
		this.payments = List.copyOf(payments);
		// the payments spread over the sends of the transfers
		List<double[]> merged = new ArrayList<>();
		for (int i = 0; i < order.size(); i++) {
			merged.add(new double[] { (double) i / order.size(), order.get(i)[1] });
		}
		for (int i = 0; i < paymentOrder.size(); i++) {
			merged.add(new double[] { (i + 0.5) / paymentOrder.size(), -(paymentOrder.get(i)[1] + 1) });
		}
		merged.sort(Comparator.comparingDouble((double[] send) -> send[0]));
		this.sends = merged.stream().mapToLong((send) -> (long) send[1]).toArray();
		this.batch = options.runs(RunOptions.BATCH);
		List<String> topics = new ArrayList<>(List.of(TransferListeners.TOPIC));
		if (this.batch) {
			topics.add(TransferListeners.BATCH_TOPIC);
		}
		if (options.runs(RunOptions.LEASE)) {
			topics.add(PaymentListeners.TOPIC);
		}
		this.topics = List.copyOf(topics);
		this.stalls = (options.control() || options.payments() < 3) ? Set.of()
				: Set.of((long) options.payments() / 3, (long) options.payments() * 2 / 3);
		this.bootstrapServers = bootstrapServers;
		Properties properties = new Properties();
		properties.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
		properties.put(ProducerConfig.ACKS_CONFIG, "all");
		properties.put(ProducerConfig.LINGER_MS_CONFIG, 5);
		// the broker is restarted during the run: wait for it rather than fail
		properties.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 600_000);
		properties.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 600_000);
		this.producer = new KafkaProducer<>(properties, new StringSerializer(), new StringSerializer());
	}

	List<Transfer> transfers() {
		return this.transfers;
	}

	List<Payment> payments() {
		return this.payments;
	}

	/** Send every transfer and its re-sends, evenly over the given time. */
	void sendAll(Duration over) throws InterruptedException {
		long start = System.nanoTime();
		long perSend = over.toNanos() / Math.max(1, this.sends.length);
		Set<Long> sent = new HashSet<>();
		for (int i = 0; i < this.sends.length; i++) {
			long due = start + i * perSend;
			long wait = due - System.nanoTime();
			if (wait > 2_000_000) {
				Thread.sleep(wait / 1_000_000);
			}
			if (this.sends[i] >= 0) {
				this.producer.send(record(this.transfers.get((int) this.sends[i])));
			}
			else {
				sendPayment(this.payments.get((int) -(this.sends[i] + 1)), sent);
			}
		}
		this.stallDuplicates.shutdown();
		this.stallDuplicates.awaitTermination(1, TimeUnit.MINUTES);
		this.producer.flush();
		this.duplicates.addAndGet(this.sends.length - this.transfers.size() - this.payments.size());
	}

	private ProducerRecord<String, String> record(Transfer transfer) {
		ProducerRecord<String, String> record = new ProducerRecord<>(
				TransferListeners.topic(transfer.id(), this.batch), String.valueOf(transfer.from()), transfer.value());
		record.headers().add(KEY_HEADER, transfer.key().getBytes(StandardCharsets.UTF_8));
		return record;
	}

	private void sendPayment(Payment payment, Set<Long> sent) {
		if (!this.stalls.contains(payment.id()) || !sent.add(payment.id())) {
			this.producer.send(record(payment));
			return;
		}
		int partition = payment.account() % FaultPlan.PARTITIONS;
		ProducerRecord<String, String> stalling = new ProducerRecord<>(PaymentListeners.TOPIC, partition,
				String.valueOf(payment.account()), payment.value());
		stalling.headers().add(KEY_HEADER, payment.key().getBytes(StandardCharsets.UTF_8));
		stalling.headers().add(PaymentListeners.STALL_HEADER, new byte[0]);
		this.producer.send(stalling);
		ProducerRecord<String, String> duplicate = new ProducerRecord<>(PaymentListeners.TOPIC,
				(partition + FaultPlan.PARTITIONS / 2) % FaultPlan.PARTITIONS, String.valueOf(payment.account()), payment.value());
		duplicate.headers().add(KEY_HEADER, payment.key().getBytes(StandardCharsets.UTF_8));
		this.stallDuplicates.schedule(() -> {
			this.producer.send(duplicate);
			this.duplicates.incrementAndGet();
		}, 2, TimeUnit.SECONDS);
	}

	private static ProducerRecord<String, String> record(Payment payment) {
		ProducerRecord<String, String> record = new ProducerRecord<>(PaymentListeners.TOPIC,
				String.valueOf(payment.account()), payment.value());
		record.headers().add(KEY_HEADER, payment.key().getBytes(StandardCharsets.UTF_8));
		return record;
	}

	/**
	 * Send again, unchanged, up to {@code limit} records of a partition of each topic the
	 * workload reads, from a point {@code fraction} of the way into what it holds now.
	 * @return how many records were sent again
	 */
	int replay(int partition, double fraction, int limit) {
		int replayed = 0;
		for (String topic : this.topics) {
			replayed += replay(topic, partition, fraction, limit);
		}
		return replayed;
	}

	/**
	 * Send again, unchanged, up to {@code limit} records of a partition from a point
	 * {@code fraction} of the way into what it holds now.
	 * @return how many records were sent again
	 */
	private int replay(String topic, int partition, double fraction, int limit) {
		Properties properties = new Properties();
		properties.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, this.bootstrapServers);
		properties.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
		TopicPartition topicPartition = new TopicPartition(topic, partition);
		int replayed = 0;
		try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(properties, new StringDeserializer(),
				new StringDeserializer())) {
			consumer.assign(List.of(topicPartition));
			long end = consumer.endOffsets(List.of(topicPartition), Duration.ofSeconds(30)).get(topicPartition);
			long from = (long) (end * fraction);
			long until = Math.min(end, from + limit);
			consumer.seek(topicPartition, from);
			long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
			while (consumer.position(topicPartition) < until && System.nanoTime() < deadline) {
				for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
					if (record.offset() >= until) {
						break;
					}
					ProducerRecord<String, String> copy = new ProducerRecord<>(record.topic(), record.partition(),
							record.key(), record.value(), record.headers());
					this.producer.send(copy);
					replayed++;
				}
			}
		}
		this.producer.flush();
		this.duplicates.addAndGet(replayed);
		return replayed;
	}

	long duplicatesInjected() {
		return this.duplicates.get();
	}

	@Override
	public void close() {
		this.stallDuplicates.shutdownNow();
		this.producer.close(Duration.ofSeconds(30));
	}

}
