package dev.idempotency.benchmarks;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/**
 * A blocking HTTP/1.1 client on one keep-alive connection, for the HTTP benchmark: it
 * writes a request and reads the response with as little work as the protocol allows, so
 * that the client, which shares the benchmark's CPU with the server, costs little next to
 * the handlers it measures.
 */
final class RawHttpClient implements AutoCloseable {

	private final String host;

	private final int port;

	private Socket socket;

	private OutputStream out;

	private InputStream in;

	RawHttpClient(String host, int port) {
		this.host = host;
		this.port = port;
	}

	/**
	 * Send a JSON {@code POST} and read its response.
	 * @return the status code
	 */
	int post(String path, String idempotencyKey, String body) throws IOException {
		if (this.socket == null) {
			this.socket = new Socket(this.host, this.port);
			this.socket.setTcpNoDelay(true);
			this.out = this.socket.getOutputStream();
			this.in = new BufferedInputStream(this.socket.getInputStream(), 16384);
		}
		byte[] content = body.getBytes(StandardCharsets.UTF_8);
		StringBuilder request = new StringBuilder(256).append("POST ").append(path).append(" HTTP/1.1\r\nHost: ")
			.append(this.host).append(':').append(this.port)
			.append("\r\nContent-Type: application/json\r\nContent-Length: ").append(content.length).append("\r\n");
		if (idempotencyKey != null) {
			request.append("Idempotency-Key: ").append(idempotencyKey).append("\r\n");
		}
		request.append("\r\n");
		this.out.write(request.toString().getBytes(StandardCharsets.ISO_8859_1));
		this.out.write(content);
		this.out.flush();
		return readResponse();
	}

	private int readResponse() throws IOException {
		String status = line();
		int code = Integer.parseInt(status.substring(9, 12));
		long length = -1;
		boolean chunked = false;
		boolean close = false;
		for (String header = line(); !header.isEmpty(); header = line()) {
			int colon = header.indexOf(':');
			String name = header.substring(0, colon).trim();
			String value = header.substring(colon + 1).trim();
			if (name.equalsIgnoreCase("Content-Length")) {
				length = Long.parseLong(value);
			}
			else if (name.equalsIgnoreCase("Transfer-Encoding") && value.equalsIgnoreCase("chunked")) {
				chunked = true;
			}
			else if (name.equalsIgnoreCase("Connection") && value.equalsIgnoreCase("close")) {
				close = true;
			}
		}
		if (chunked) {
			for (long size = Long.parseLong(line().split(";")[0].trim(), 16); size > 0;
					size = Long.parseLong(line().split(";")[0].trim(), 16)) {
				skip(size);
				line();
			}
			line();
		}
		else if (length > 0) {
			skip(length);
		}
		if (close) {
			close();
		}
		return code;
	}

	private void skip(long bytes) throws IOException {
		long left = bytes;
		while (left > 0) {
			long skipped = this.in.skip(left);
			if (skipped <= 0) {
				if (this.in.read() < 0) {
					throw new IOException("connection closed in a response body");
				}
				skipped = 1;
			}
			left -= skipped;
		}
	}

	private String line() throws IOException {
		ByteArrayOutputStream line = new ByteArrayOutputStream(64);
		for (int b = this.in.read(); b != '\n'; b = this.in.read()) {
			if (b < 0) {
				throw new IOException("connection closed");
			}
			if (b != '\r') {
				line.write(b);
			}
		}
		return line.toString(StandardCharsets.ISO_8859_1);
	}

	@Override
	public void close() throws IOException {
		if (this.socket != null) {
			this.socket.close();
			this.socket = null;
		}
	}

}
