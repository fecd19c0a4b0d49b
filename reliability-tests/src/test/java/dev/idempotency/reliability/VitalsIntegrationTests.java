package dev.idempotency.reliability;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The soak's readings of a real JVM: its heap after a collection, its threads and its
 * connections per server, counted from {@code /proc}.
 */
class VitalsIntegrationTests {

	@Test
	void readsTheHeapTheThreadsAndTheConnectionsOfEachServerOfARunningJvm(@TempDir Path logs) throws Exception {
		try (ServerSocket postgres = new ServerSocket(0); ServerSocket redis = new ServerSocket(0)) {
			List<Socket> accepted = Collections.synchronizedList(new ArrayList<>());
			Thread acceptor = acceptAll(List.of(postgres, redis), accepted);
			JavaProcess holder = new JavaProcess("holder", List.of("-Xmx64m", "-XX:+UseSerialGC"),
					ConnectionHolder.class.getName(),
					List.of(Integer.toString(postgres.getLocalPort()), Integer.toString(postgres.getLocalPort()),
							Integer.toString(postgres.getLocalPort()), Integer.toString(redis.getLocalPort())),
					logs.resolve("holder.log"));
			holder.start();
			try {
				await().atMost(Duration.ofSeconds(30)).until(() -> accepted.size() == 4);
				Map<String, List<Integer>> ports = Map.of("postgres", List.of(postgres.getLocalPort()), "redis",
						List.of(redis.getLocalPort()), "kafka", List.of(1, 2));
				Vitals.Sample sample = Vitals.sample("start", List.of(holder), ports, "jdbc:postgresql://127.0.0.1:1/x");
				assertThat(sample.processes()).singleElement().satisfies((process) -> {
					assertThat(process.pid()).isEqualTo(holder.pid());
					assertThat(process.connections()).containsEntry("postgres", 3)
						.containsEntry("redis", 1)
						.containsEntry("kafka", 0);
					assertThat(process.threads()).isGreaterThan(5);
					// the holder keeps 8 MB reachable; a collection leaves at least that
					assertThat(process.heapAfterGcKb()).isGreaterThan(8 * 1024).isLessThan(64 * 1024);
				});
				// the database is not there: its tables are unknown, not zero
				assertThat(sample.tables().processedRows()).isEqualTo(-1);
				holder.pause();
				assertThat(Vitals.sample("paused", List.of(holder), ports, "jdbc:postgresql://127.0.0.1:1/x").processes())
					.isEmpty();
				holder.resume();
			}
			finally {
				holder.kill();
				acceptor.interrupt();
				for (Socket socket : accepted) {
					socket.close();
				}
			}
		}
	}

	@Test
	void addsTheGenerationsOfSerialAndReadsTheWholeHeapOfG1() {
		assertThat(Vitals.heapUsedKb("""
				 def new generation   total 4928K, used 1024K [0x00000000f0000000, 0x00000000f0550000)
				  eden space 4416K,  23% used [0x00000000f0000000, 0x00000000f0100000)
				 tenured generation   total 10944K, used 6000K [0x00000000f5550000, 0x00000000f6000000)
				 Metaspace       used 21000K, committed 21500K, reserved 1114112K
				""")).isEqualTo(7024);
		assertThat(Vitals.heapUsedKb("""
				 garbage-first heap   total 262144K, used 51200K [0x00000000f0000000, 0x0000000100000000)
				  region size 1024K, 3 young (3072K), 0 survivors (0K)
				 Metaspace       used 21000K, committed 21500K, reserved 1114112K
				""")).isEqualTo(51200);
		assertThat(Vitals.heapUsedKb("nothing")).isEqualTo(-1);
	}

	@Test
	void comparesEachProcessWithItsFirstReadingAndSaysWhenItWasRestarted() {
		Vitals.Sample start = new Vitals.Sample("start",
				List.of(new Vitals.Process("worker-0", 10, 40 * 1024, 50, Map.of("postgres", 5)),
						new Vitals.Process("worker-1", 11, 40 * 1024, 50, Map.of("postgres", 5))),
				new Vitals.Tables(100, 1048576, 3, 0));
		Vitals.Sample end = new Vitals.Sample("end",
				List.of(new Vitals.Process("worker-0", 10, 42 * 1024, 51, Map.of("postgres", 4)),
						new Vitals.Process("worker-1", 12, 41 * 1024, 49, Map.of("postgres", 5)),
						new Vitals.Process("worker-2", 13, 41 * 1024, 49, Map.of("postgres", 5))),
				new Vitals.Tables(1100, 3 * 1048576, 0, 0));
		assertThat(Vitals.compare(start, end)).containsExactly(
				"vitals growth worker-0: heap_after_gc_mb 40.0->42.0 threads 50->51 connections {postgres=5->4}",
				"vitals growth worker-1 (restarted since): heap_after_gc_mb 40.0->41.0 threads 50->49 connections {postgres=5->5}",
				"vitals growth worker-2: not running at the start",
				"vitals growth tables: processed_messages rows 100->1100 (+2.0 MB) outbox rows 3->0 (+0.0 MB)");
	}

	private static Thread acceptAll(List<ServerSocket> servers, List<Socket> accepted) {
		Thread acceptor = new Thread(() -> {
			for (ServerSocket server : servers) {
				new Thread(() -> {
					try {
						while (true) {
							Socket socket = server.accept();
							synchronized (accepted) {
								accepted.add(socket);
							}
						}
					}
					catch (IOException ex) {
						// closed
					}
				}).start();
			}
		});
		acceptor.start();
		return acceptor;
	}

	/**
	 * Connects to each port given and keeps the connections and 8 MB of heap until killed.
	 */
	public static final class ConnectionHolder {

		public static void main(String[] args) throws Exception {
			List<Object> kept = new ArrayList<>();
			for (String port : args) {
				kept.add(new Socket("127.0.0.1", Integer.parseInt(port)));
			}
			kept.add(new byte[8 * 1024 * 1024]);
			Thread.sleep(Long.MAX_VALUE);
			System.out.println(kept);
		}

	}

}
