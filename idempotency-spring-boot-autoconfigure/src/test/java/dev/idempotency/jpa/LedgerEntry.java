package dev.idempotency.jpa;

import jakarta.persistence.Entity;
import jakarta.persistence.GeneratedValue;
import jakarta.persistence.GenerationType;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

@Entity
@Table(name = "jpa_ledger_entries")
class LedgerEntry {

	@Id
	@GeneratedValue(strategy = GenerationType.IDENTITY)
	private Long id;

	private String reference;

	protected LedgerEntry() {
	}

	LedgerEntry(String reference) {
		this.reference = reference;
	}

	String getReference() {
		return this.reference;
	}

}
