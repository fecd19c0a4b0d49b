package dev.idempotency.test;

import org.springframework.beans.factory.annotation.Autowired;

/**
 * A test listener (or a service it calls) that writes the effects of the records it
 * applies to the application's
 * {@link TestEffects}, which it is given by setter injection: a subclass declares only its
 * listener methods, and is registered as a component of its application (such as with
 * {@link TestApplication#with(Class...)} or {@code @Import}).
 */
public abstract class RecordingListener {

	private TestEffects effects;

	/**
	 * Set the effects this listener writes.
	 * @param effects the application's effects
	 */
	@Autowired
	public void setEffects(TestEffects effects) {
		this.effects = effects;
	}

	/**
	 * The effects this listener writes.
	 * @return the application's effects
	 */
	protected TestEffects effects() {
		return this.effects;
	}

}
