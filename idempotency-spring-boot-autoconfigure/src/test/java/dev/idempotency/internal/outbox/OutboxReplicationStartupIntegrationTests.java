package dev.idempotency.internal.outbox;

import dev.idempotency.test.TestInfrastructure;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThatException;

/**
 * The replication relay refuses to start on a server or with a role that cannot
 * replicate, naming what to change, on real PostgreSQL servers.
 */
class OutboxReplicationStartupIntegrationTests {

	@Test
	void aRoleWithoutTheReplicationAttributeStopsTheApplicationNamingTheProperty() {
		ReplicationFixtures.jdbc()
			.execute("DO $$ BEGIN CREATE ROLE outbox_no_replication LOGIN PASSWORD 'secret' NOREPLICATION; "
					+ "EXCEPTION WHEN duplicate_object THEN NULL; END $$");
		// the URL without its user parameter, which would win over the username
		String url = TestInfrastructure.postgres().jdbcUrl().replaceFirst("\\?.*", "");
		assertThatException()
			.isThrownBy(() -> ReplicationFixtures.run("replrole", "idempotency.outbox.replication.url=" + url,
					"idempotency.outbox.replication.username=outbox_no_replication",
					"idempotency.outbox.replication.password=secret").close())
			.withStackTraceContaining("the REPLICATION attribute")
			.withStackTraceContaining("idempotency.outbox.replication.url/username");
	}

	@Test
	void aServerWithoutLogicalWalLevelStopsTheApplicationNamingTheSetting() throws Exception {
		// a server of its own, with the default wal_level (replica)
		try (EmbeddedPostgres server = EmbeddedPostgres.builder().start()) {
			String url = server.getJdbcUrl("postgres", "postgres");
			assertThatException()
				.isThrownBy(() -> ReplicationFixtures.run("replwal", "spring.datasource.url=" + url).close())
				.withStackTraceContaining("needs wal_level = logical on the server, which has wal_level = replica");
		}
	}

}
