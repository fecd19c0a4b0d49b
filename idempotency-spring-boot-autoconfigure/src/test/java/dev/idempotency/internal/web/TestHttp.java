package dev.idempotency.internal.web;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

import org.jspecify.annotations.Nullable;

/**
 * A client of the test applications' idempotent handlers: JSON {@code POST}s with an
 * {@code Idempotency-Key}.
 */
final class TestHttp {

	static final String KEY = "Idempotency-Key";

	private static final HttpClient client = HttpClient.newHttpClient();

	private TestHttp() {
	}

	static HttpResponse<String> post(URI uri, @Nullable String key, String body) {
		return send(request(uri, key, body));
	}

	static HttpRequest.Builder request(URI uri, @Nullable String key, String body) {
		HttpRequest.Builder request = HttpRequest.newBuilder(uri)
			.header("Content-Type", "application/json")
			.POST(HttpRequest.BodyPublishers.ofString(body));
		return (key != null) ? request.header(KEY, key) : request;
	}

	static HttpResponse<String> send(HttpRequest.Builder request) {
		try {
			return client.send(request.build(), HttpResponse.BodyHandlers.ofString());
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
	}

}
