package dev.idempotency.reliability;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;

final class Ports {

	private Ports() {
	}

	static int free() {
		try (ServerSocket socket = new ServerSocket(0)) {
			socket.setReuseAddress(true);
			return socket.getLocalPort();
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

}
