package dev.idempotency.autoconfigure;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.Charset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;

import org.flywaydb.core.api.Location;
import org.flywaydb.core.api.ResourceProvider;
import org.flywaydb.core.api.resource.LoadableResource;
import org.flywaydb.core.internal.resource.classpath.ClassPathResource;
import org.jspecify.annotations.Nullable;

import org.springframework.core.io.Resource;
import org.springframework.core.io.support.PathMatchingResourcePatternResolver;
import org.springframework.core.io.support.ResourcePatternResolver;

/**
 * The starter's migrations, listed for its Flyway in a native image. Flyway lists a class
 * path location by scanning the jars and directories it comes from, which a native image
 * does not have; Spring's resource pattern resolver lists the resources the image
 * includes (the migrations are, by {@link IdempotencyRuntimeHints}). Spring Boot does the
 * same for the application's own Flyway.
 */
final class NativeImageMigrations implements ResourceProvider {

	private final ClassLoader classLoader;

	private final Charset encoding;

	private final List<LoadableResource> migrations = new ArrayList<>();

	NativeImageMigrations(ClassLoader classLoader, Charset encoding) {
		this.classLoader = classLoader;
		this.encoding = encoding;
		Location location = new Location(IdempotencySchemaMigration.LOCATION);
		try {
			for (Resource migration : new PathMatchingResourcePatternResolver(classLoader).getResources(
					ResourcePatternResolver.CLASSPATH_ALL_URL_PREFIX + location.getRootPath() + "/*.sql")) {
				this.migrations.add(new ClassPathResource(location, location.getRootPath() + "/" + migration.getFilename(),
						classLoader, encoding));
			}
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Failed to list the migrations in " + location, ex);
		}
	}

	@Override
	public @Nullable LoadableResource getResource(String name) {
		return (this.classLoader.getResource(name) != null)
				? new ClassPathResource(null, name, this.classLoader, this.encoding) : null;
	}

	@Override
	public Collection<LoadableResource> getResources(String prefix, String[] suffixes) {
		return this.migrations.stream()
			.filter((migration) -> migration.getFilename().startsWith(prefix)
					&& Arrays.stream(suffixes).anyMatch(migration.getFilename()::endsWith))
			.toList();
	}

}
