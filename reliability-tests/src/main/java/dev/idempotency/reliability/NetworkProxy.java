package dev.idempotency.reliability;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Deque;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A TCP proxy between the workload and one server, through which the driver injects
 * network faults: added latency, every connection reset at once, a black hole (nothing
 * forwarded either way, new connections accepted and left silent, no RST and no FIN) and
 * a half-open connection (the server's answers held back while the requests go through).
 * In front of an HTTP server it can also drop a share of the answers for good
 * ({@link #dropAnswers}): the request reaches the server, the connection is reset as the
 * answer starts, and the client does not know whether its request was applied.
 * <p>
 * Held bytes are not lost: the proxy keeps reading and keeps them (then the kernel's
 * buffers do, once its queue is full) and forwards them when the fault heals, as TCP
 * would retransmit them once a partition ends, also when the client gave up on them
 * meanwhile; a connection whose other side closed meanwhile is closed after them.
 * <p>
 * Each connection is served by four threads (a reader and a writer each way): the reader
 * forwards what it reads while no fault applies, and hands it to the writer otherwise,
 * so that a delay applies to every chunk from the moment it arrived rather than adding
 * up behind the chunks before it.
 */
final class NetworkProxy implements AutoCloseable {

	private static final byte[] END = new byte[0];

	private final String name;

	private final ServerSocket server;

	private final Set<Connection> connections = ConcurrentHashMap.newKeySet();

	private final Object lock = new Object();

	private volatile InetSocketAddress target;

	private volatile long latencyNanos;

	// guarded by lock
	private boolean requestsFlow = true;

	// guarded by lock
	private boolean answersFlow = true;

	// guarded by lock
	private boolean connecting = true;

	private final AtomicLong accepted = new AtomicLong();

	private final AtomicLong reset = new AtomicLong();

	private final AtomicLong delayedChunks = new AtomicLong();

	private final AtomicLong heldBytes = new AtomicLong();

	private final AtomicLong heldConnections = new AtomicLong();

	private final AtomicLong abandoned = new AtomicLong();

	private final AtomicLong droppedAnswers = new AtomicLong();

	// guarded by itself; null while no answers are dropped
	private volatile Random dropRandom;

	private volatile double dropShare;

	/** A proxy listening on a free port of the loopback interface; see {@link #start}. */
	NetworkProxy(String name) {
		this.name = name;
		try {
			this.server = new ServerSocket();
			this.server.setReuseAddress(true);
			this.server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 200);
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

	/** Forward every connection to the server on {@code port} of the loopback interface. */
	NetworkProxy start(int port) {
		this.target = new InetSocketAddress(InetAddress.getLoopbackAddress(), port);
		Thread acceptor = new Thread(this::accept, "proxy-" + this.name + "-accept");
		acceptor.setDaemon(true);
		acceptor.start();
		return this;
	}

	int port() {
		return this.server.getLocalPort();
	}

	String name() {
		return this.name;
	}

	/** Delay every chunk, each way, by {@code latency} until {@link #heal()}. */
	void addLatency(Duration latency) {
		this.latencyNanos = latency.toNanos();
	}

	/**
	 * Reset every open connection at once (an RST to both sides, as a restarted firewall
	 * or load balancer would).
	 * @return how many connections to the server were reset (not counting those accepted
	 * and still connecting to it)
	 */
	int dropConnections() {
		int dropped = 0;
		for (Connection connection : this.connections) {
			boolean established = connection.established;
			if (connection.reset() && established) {
				dropped++;
			}
		}
		this.reset.addAndGet(dropped);
		return dropped;
	}

	/**
	 * Forward nothing, either way, and leave new connections accepted but unanswered,
	 * until {@link #heal()}. Nothing is closed.
	 */
	void blackHole() {
		synchronized (this.lock) {
			this.requestsFlow = false;
			this.answersFlow = false;
			this.connecting = false;
		}
	}

	/**
	 * Keep forwarding the requests to the server but hold back its answers, until
	 * {@link #heal()}: the server does the work, the client never hears of it.
	 */
	void holdAnswers() {
		synchronized (this.lock) {
			this.answersFlow = false;
		}
	}

	/**
	 * Drop a share of the answers, for as long as the proxy runs: when the server starts
	 * to answer a request (its first bytes after bytes of the client's), the proxy resets
	 * the connection on both sides instead, with the given probability, drawn from the
	 * seed. For HTTP/1.1 without pipelining each such answer is one response: the server
	 * ran the request, and the client gets a connection reset instead of its response.
	 * {@link #heal()} leaves this on.
	 * @param share the probability that an answer is dropped
	 * @param seed seeds the draws
	 */
	NetworkProxy dropAnswers(double share, long seed) {
		this.dropShare = share;
		this.dropRandom = new Random(seed);
		return this;
	}

	/** End every fault: forward what was held, without delay. */
	void heal() {
		this.latencyNanos = 0;
		synchronized (this.lock) {
			this.requestsFlow = true;
			this.answersFlow = true;
			this.connecting = true;
			this.lock.notifyAll();
		}
	}

	/** What the proxy did so far. */
	Stats stats() {
		return new Stats(this.accepted.get(), this.connections.size(), this.reset.get(), this.delayedChunks.get(),
				this.heldBytes.get(), this.heldConnections.get(), this.abandoned.get(), this.droppedAnswers.get());
	}

	@Override
	public void close() {
		heal();
		closeQuietly(this.server);
		this.connections.forEach(Connection::reset);
	}

	private void accept() {
		while (!this.server.isClosed()) {
			try {
				Socket client = this.server.accept();
				this.accepted.incrementAndGet();
				Connection connection = new Connection(client);
				this.connections.add(connection);
				start(connection::open, "open");
			}
			catch (IOException ex) {
				// closed
			}
		}
	}

	private void start(Runnable task, String role) {
		Thread thread = new Thread(task, "proxy-" + this.name + "-" + role);
		thread.setDaemon(true);
		thread.start();
	}

	private boolean held() {
		synchronized (this.lock) {
			return !this.requestsFlow || !this.answersFlow;
		}
	}

	private boolean flows(boolean requests) {
		synchronized (this.lock) {
			return requests ? this.requestsFlow : this.answersFlow;
		}
	}

	private void awaitFlow(boolean requests) throws InterruptedException {
		synchronized (this.lock) {
			while (!(requests ? this.requestsFlow : this.answersFlow)) {
				this.lock.wait();
			}
		}
	}

	private void awaitConnecting() throws InterruptedException {
		synchronized (this.lock) {
			if (!this.connecting) {
				this.heldConnections.incrementAndGet();
			}
			while (!this.connecting) {
				this.lock.wait();
			}
		}
	}

	private static void closeQuietly(AutoCloseable closeable) {
		try {
			if (closeable != null) {
				closeable.close();
			}
		}
		catch (Exception ex) {
			// closed already
		}
	}

	/**
	 * What a proxy did.
	 * @param accepted connections accepted
	 * @param open connections open now
	 * @param reset connections reset by {@link #dropConnections()}
	 * @param delayedChunks chunks forwarded with added latency
	 * @param heldBytes bytes held back by a black hole or a half-open connection
	 * (forwarded when it healed, unless a side had closed the connection meanwhile)
	 * @param heldConnections connections accepted during a black hole, connected to the
	 * server only once it healed
	 * @param abandoned connections their clients closed while a black hole or a half-open
	 * connection held them: the fault outlasted the clients' timeouts
	 * @param droppedAnswers answers dropped by {@link #dropAnswers}: connections reset as the
	 * server started to answer
	 */
	record Stats(long accepted, long open, long reset, long delayedChunks, long heldBytes, long heldConnections,
			long abandoned, long droppedAnswers) {

	}

	private final class Connection {

		private final Socket client;

		private volatile Socket upstream;

		private volatile boolean established;

		private volatile boolean closed;

		// whether the server's bytes since the client's last ones were let through
		private volatile boolean answering;

		Connection(Socket client) {
			this.client = client;
		}

		void open() {
			try {
				awaitConnecting();
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				return;
			}
			if (this.closed) {
				return;
			}
			try {
				this.upstream = new Socket();
				this.upstream.connect(NetworkProxy.this.target, 5000);
			}
			catch (IOException ex) {
				// the server is down: the client is refused as it would be without the proxy
				reset();
				return;
			}
			if (this.closed) {
				reset();
				return;
			}
			this.established = true;
			pipe(this.client, this.upstream, true);
			pipe(this.upstream, this.client, false);
		}

		private void pipe(Socket from, Socket to, boolean requests) {
			Pipe pipe = new Pipe(from, to, requests);
			String direction = requests ? "requests" : "answers";
			start(pipe::read, "read-" + direction);
			start(pipe::write, "write-" + direction);
		}

		/**
		 * One direction of the connection. The reader forwards a chunk itself when nothing
		 * is queued or being written and no fault applies, and queues it for the writer
		 * otherwise, so that the order of the bytes is kept.
		 */
		private final class Pipe {

			private static final int MAX_QUEUED = 256;

			private final Socket from;

			private final Socket to;

			private final boolean requests;

			// guarded by this
			private final Deque<Chunk> chunks = new ArrayDeque<>();

			// guarded by this
			private boolean writing;

			Pipe(Socket from, Socket to, boolean requests) {
				this.from = from;
				this.to = to;
				this.requests = requests;
			}

			void read() {
				byte[] buffer = new byte[65536];
				try {
					InputStream in = this.from.getInputStream();
					OutputStream out = this.to.getOutputStream();
					while (true) {
						int read = in.read(buffer);
						if (read < 0) {
							if (this.requests && !Connection.this.closed && held()) {
								// a client that timed out while the fault held its connection
								NetworkProxy.this.abandoned.incrementAndGet();
							}
							break;
						}
						// what arrives while its direction is held waits in the queue, then in
						// the kernel's buffers once the queue is full
						if (this.requests) {
							Connection.this.answering = false;
						}
						else if (!Connection.this.answering) {
							if (dropsAnswer()) {
								NetworkProxy.this.droppedAnswers.incrementAndGet();
								reset();
								return;
							}
							Connection.this.answering = true;
						}
						boolean held = !flows(this.requests);
						if (held) {
							NetworkProxy.this.heldBytes.addAndGet(read);
						}
						synchronized (this) {
							if (this.chunks.isEmpty() && !this.writing && !held
									&& NetworkProxy.this.latencyNanos == 0) {
								out.write(buffer, 0, read);
								out.flush();
								continue;
							}
							while (this.chunks.size() >= MAX_QUEUED) {
								if (Connection.this.closed) {
									return;
								}
								wait(1000);
							}
							this.chunks.add(new Chunk(System.nanoTime(), Arrays.copyOf(buffer, read), held));
							notifyAll();
						}
					}
				}
				catch (IOException ex) {
					// reset or closed
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
				}
				synchronized (this) {
					this.chunks.add(new Chunk(System.nanoTime(), END, false));
					notifyAll();
				}
			}

			void write() {
				try {
					OutputStream out = this.to.getOutputStream();
					while (true) {
						Chunk chunk;
						synchronized (this) {
							while (this.chunks.isEmpty()) {
								if (Connection.this.closed) {
									return;
								}
								wait(1000);
							}
							chunk = this.chunks.poll();
							this.writing = true;
							notifyAll();
						}
						if (chunk.bytes() == END) {
							break;
						}
						long latency = NetworkProxy.this.latencyNanos;
						if (latency > 0) {
							NetworkProxy.this.delayedChunks.incrementAndGet();
							long wait = chunk.arrived() + latency - System.nanoTime();
							if (wait > 0) {
								TimeUnit.NANOSECONDS.sleep(wait);
							}
						}
						// what was read before the direction was held is held too
						if (!chunk.held() && !flows(this.requests)) {
							NetworkProxy.this.heldBytes.addAndGet(chunk.bytes().length);
						}
						awaitFlow(this.requests);
						out.write(chunk.bytes());
						out.flush();
						synchronized (this) {
							this.writing = false;
						}
					}
				}
				catch (IOException ex) {
					// reset or closed
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
				}
				finally {
					close();
				}
			}

		}

		private boolean dropsAnswer() {
			Random random = NetworkProxy.this.dropRandom;
			if (random == null) {
				return false;
			}
			synchronized (random) {
				return random.nextDouble() < NetworkProxy.this.dropShare;
			}
		}

		// an orderly close of both sides, once either side ended
		private void close() {
			if (!this.closed) {
				this.closed = true;
				closeQuietly(this.client);
				closeQuietly(this.upstream);
				NetworkProxy.this.connections.remove(this);
			}
		}

		/** Close both sides with an RST; whether the connection was open. */
		boolean reset() {
			boolean open = !this.closed;
			this.closed = true;
			resetQuietly(this.client);
			resetQuietly(this.upstream);
			NetworkProxy.this.connections.remove(this);
			return open;
		}

		private static void resetQuietly(Socket socket) {
			if (socket != null) {
				try {
					// linger 0: close sends an RST, not a FIN
					socket.setSoLinger(true, 0);
				}
				catch (IOException ex) {
					// closed already
				}
				closeQuietly(socket);
			}
		}

	}

	private record Chunk(long arrived, byte[] bytes, boolean held) {

	}

}
