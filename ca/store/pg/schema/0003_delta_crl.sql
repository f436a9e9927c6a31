-- The current delta CRL (RFC 5280 section 5.2.4), in the row of the
-- current CRL: its number, of the sequence that last_number reserves, its
-- DER, and a version that changes with it (the stamp readers compare).
ALTER TABLE minica_crl
	ADD COLUMN delta_number  numeric CHECK (delta_number >= 0),
	ADD COLUMN delta_der     bytea,
	ADD COLUMN delta_version bigint NOT NULL DEFAULT 0;
