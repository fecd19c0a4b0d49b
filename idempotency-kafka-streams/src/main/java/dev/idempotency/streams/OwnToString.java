package dev.idempotency.streams;

/**
 * Whether a class has a {@code toString} other than {@code Object}'s, which gives the
 * object's identity rather than its content.
 */
final class OwnToString {

	private static final ClassValue<Boolean> CLASSES = new ClassValue<>() {

		@Override
		protected Boolean computeValue(Class<?> type) {
			try {
				return type.getMethod("toString").getDeclaringClass() != Object.class;
			}
			catch (NoSuchMethodException ex) {
				return false;
			}
		}

	};

	private OwnToString() {
	}

	static boolean of(Class<?> type) {
		return CLASSES.get(type);
	}

}
