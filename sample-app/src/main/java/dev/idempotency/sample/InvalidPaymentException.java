package dev.idempotency.sample;

import java.net.URI;

import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;
import org.springframework.web.ErrorResponseException;

/**
 * A payment request that is refused, rendered as an RFC 9457 problem detail.
 */
class InvalidPaymentException extends ErrorResponseException {

	InvalidPaymentException(HttpStatus status, String type, String title, String detail) {
		super(status, problem(status, type, title, detail), null);
	}

	static InvalidPaymentException badRequest(String detail) {
		return new InvalidPaymentException(HttpStatus.BAD_REQUEST, "invalid-payment", "Invalid payment request",
				detail);
	}

	static InvalidPaymentException unprocessable(String type, String title, String detail) {
		return new InvalidPaymentException(HttpStatus.UNPROCESSABLE_CONTENT, type, title, detail);
	}

	private static ProblemDetail problem(HttpStatus status, String type, String title, String detail) {
		ProblemDetail problem = ProblemDetail.forStatusAndDetail(status, detail);
		problem.setType(URI.create("https://github.com/idempotency/sample/problems/" + type));
		problem.setTitle(title);
		return problem;
	}

}
