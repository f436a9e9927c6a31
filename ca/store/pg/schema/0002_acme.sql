-- The ACME server's objects (accounts, orders, authorizations, external
-- account bindings...), as the server encodes them, and its nonces.
CREATE TABLE minica_acme_objects (
	kind text COLLATE "C" NOT NULL,
	id   text COLLATE "C" NOT NULL,
	data text NOT NULL,
	PRIMARY KEY (kind, id)
);

CREATE TABLE minica_acme_nonces (
	nonce   text COLLATE "C" PRIMARY KEY,
	expires timestamptz NOT NULL
);
CREATE INDEX minica_acme_nonces_expires ON minica_acme_nonces (expires);
