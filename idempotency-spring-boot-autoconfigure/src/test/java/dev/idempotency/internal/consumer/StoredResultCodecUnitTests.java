package dev.idempotency.internal.consumer;

import dev.idempotency.StoredResultCodec;

import java.util.List;

import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Stored results are JSON read back as the method's generic return type.
 */
class StoredResultCodecUnitTests {

	private final JacksonStoredResultCodec codec = new JacksonStoredResultCodec(JsonMapper.builder().build());

	@Test
	void readsBackTheGenericReturnType() throws Exception {
		List<Receipt> receipts = List.of(new Receipt("order-1", 42L));
		String json = this.codec.write(receipts);
		assertThat(json).isEqualTo("[{\"order\":\"order-1\",\"fencingToken\":42}]");
		Object read = this.codec.read(json, getClass().getDeclaredMethod("receipts").getGenericReturnType());
		assertThat(read).isEqualTo(receipts);
	}

	List<Receipt> receipts() {
		return List.of();
	}

	record Receipt(String order, long fencingToken) {
	}

}
