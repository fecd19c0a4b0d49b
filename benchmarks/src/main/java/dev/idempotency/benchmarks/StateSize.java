package dev.idempotency.benchmarks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Stream;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;

/**
 * The size of a store once the application has closed (its memtables flushed): the bytes
 * of its RocksDB files on disk (all of them, and the SST files alone), and the bytes and
 * records of its changelog partition on the broker.
 */
record StateSize(long sstBytes, long stateBytes, long changelogBytes, long changelogRecords) {

	static final StateSize NONE = new StateSize(0, 0, 0, 0);

	static StateSize of(String kafka, Path stateDir, String applicationId, String store) throws Exception {
		long sst = 0;
		long all = 0;
		try (Stream<Path> files = Files.walk(stateDir)) {
			for (Path file : files.filter(Files::isRegularFile).toList()) {
				if (!stateDir.relativize(file).toString().contains(store)) {
					continue;
				}
				long size = size(file);
				all += size;
				if (file.getFileName().toString().endsWith(".sst")) {
					sst += size;
				}
			}
		}
		TopicPartition changelog = new TopicPartition(applicationId + "-" + store + "-changelog", 0);
		Properties properties = new Properties();
		properties.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka);
		try (Admin admin = Admin.create(properties)) {
			List<Integer> brokers = admin.describeCluster().nodes().get().stream().map(Node::id).toList();
			long bytes = 0;
			for (Map<String, LogDirDescription> dirs : admin.describeLogDirs(brokers).allDescriptions().get().values()) {
				for (LogDirDescription dir : dirs.values()) {
					ReplicaInfo replica = dir.replicaInfos().get(changelog);
					if (replica != null) {
						bytes += replica.size();
					}
				}
			}
			long records = admin.listOffsets(Map.of(changelog, OffsetSpec.latest())).partitionResult(changelog).get()
				.offset();
			return new StateSize(sst, all, bytes, records);
		}
	}

	private static long size(Path file) {
		try {
			return Files.size(file);
		}
		catch (IOException ex) {
			return 0;
		}
	}

}
