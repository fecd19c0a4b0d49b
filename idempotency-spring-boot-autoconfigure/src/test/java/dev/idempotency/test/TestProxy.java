package dev.idempotency.test;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A TCP proxy in front of a real server, for outage tests: {@link #cut()} closes every
 * connection and refuses new ones, as a stopped server would; {@link #restore()} accepts
 * connections again on the same port.
 */
public final class TestProxy implements AutoCloseable {

	private final String targetHost;

	private final int targetPort;

	private final int port;

	private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();

	private volatile ServerSocket server;

	/**
	 * Start a proxy on a free port.
	 * @param targetHost the server's host
	 * @param targetPort the server's port
	 */
	public TestProxy(String targetHost, int targetPort) {
		this.targetHost = targetHost;
		this.targetPort = targetPort;
		this.port = listen(0);
	}

	/**
	 * Return the port the proxy listens on.
	 * @return the port
	 */
	public int port() {
		return this.port;
	}

	/**
	 * Close every connection and stop accepting new ones.
	 */
	public synchronized void cut() {
		closeQuietly(this.server);
		this.server = null;
		this.sockets.forEach(TestProxy::closeQuietly);
		this.sockets.clear();
	}

	/**
	 * Accept connections again.
	 */
	public synchronized void restore() {
		if (this.server == null) {
			listen(this.port);
		}
	}

	@Override
	public void close() {
		cut();
	}

	private synchronized int listen(int port) {
		try {
			ServerSocket socket = new ServerSocket();
			socket.setReuseAddress(true);
			socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
			this.server = socket;
			Thread acceptor = new Thread(() -> accept(socket), "test-proxy-" + socket.getLocalPort());
			acceptor.setDaemon(true);
			acceptor.start();
			return socket.getLocalPort();
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

	private void accept(ServerSocket socket) {
		while (!socket.isClosed()) {
			try {
				Socket client = socket.accept();
				Socket upstream = new Socket(this.targetHost, this.targetPort);
				this.sockets.add(client);
				this.sockets.add(upstream);
				pipe(client, upstream);
				pipe(upstream, client);
			}
			catch (IOException ex) {
				// closed by cut()
			}
		}
	}

	private void pipe(Socket from, Socket to) {
		Thread thread = new Thread(() -> {
			byte[] buffer = new byte[16384];
			try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
				int read;
				while ((read = in.read(buffer)) >= 0) {
					out.write(buffer, 0, read);
					out.flush();
				}
			}
			catch (IOException ex) {
				// one side closed
			}
			finally {
				closeQuietly(from);
				closeQuietly(to);
			}
		}, "test-proxy-pipe");
		thread.setDaemon(true);
		thread.start();
	}

	private static void closeQuietly(AutoCloseable closeable) {
		if (closeable != null) {
			try {
				closeable.close();
			}
			catch (Exception ex) {
				// already closed
			}
		}
	}

}
