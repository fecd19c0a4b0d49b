package dev.idempotency.internal.web;

import java.time.Duration;
import java.util.List;
import java.util.Locale;

/**
 * The settings of {@code @Idempotent} HTTP handlers, as the auto-configuration binds them.
 *
 * @param keyHeader the request header that carries the key
 * @param rejectMissingKey whether a request without a key gets a 400 (else the handler
 * runs without idempotency)
 * @param maxKeyLength the longest key accepted, in characters
 * @param maxRequestSize the largest request body read for the fingerprint, in bytes
 * @param maxResponseSize the largest response body stored, in bytes
 * @param replayedHeaders the response headers stored and replayed
 * @param fingerprintHeaders the request headers that are part of the fingerprint
 * @param storeClientErrors whether 4xx responses are stored
 * @param lease the lease of handlers in lease mode that set none
 */
public record WebSettings(String keyHeader, boolean rejectMissingKey, int maxKeyLength, long maxRequestSize,
		long maxResponseSize, List<String> replayedHeaders, List<String> fingerprintHeaders,
		boolean storeClientErrors, Duration lease) {

	/**
	 * Create the settings, with header names in lower case.
	 */
	public WebSettings {
		replayedHeaders = lowerCase(replayedHeaders);
		fingerprintHeaders = lowerCase(fingerprintHeaders);
	}

	private static List<String> lowerCase(List<String> names) {
		return names.stream().map((name) -> name.toLowerCase(Locale.ROOT)).distinct().toList();
	}

}
