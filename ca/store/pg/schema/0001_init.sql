-- The issuance database of one CA (see ca/pgstore.go). A record's data is
-- the record's JSON line exactly as the file store writes it, so that the
-- two stores hold the same bytes and a copy between them is lossless.
CREATE TABLE minica_meta (
	key   text PRIMARY KEY,
	value text NOT NULL
);

CREATE TABLE minica_records (
	serial    text COLLATE "C" PRIMARY KEY CHECK (serial ~ '^[0-9a-f]{32}$'),
	name      text COLLATE "C" NOT NULL,
	status    text NOT NULL,
	issued_at timestamptz NOT NULL,
	data      text NOT NULL
);
CREATE INDEX minica_records_name ON minica_records (name, issued_at, serial);

-- The revocation log: appended to, never updated; the latest event of a
-- serial wins.
CREATE TABLE minica_revocations (
	id         bigserial PRIMARY KEY,
	serial     text COLLATE "C" NOT NULL CHECK (serial ~ '^[0-9a-f]{32}$'),
	revoked_at timestamptz,
	reason     text NOT NULL DEFAULT '',
	not_after  timestamptz,
	lifted     boolean NOT NULL DEFAULT false
);
CREATE INDEX minica_revocations_serial ON minica_revocations (serial, id);

-- One row: the last CRL number reserved, and the current CRL.
CREATE TABLE minica_crl (
	id          int PRIMARY KEY CHECK (id = 1),
	last_number numeric NOT NULL DEFAULT 0 CHECK (last_number >= 0),
	number      numeric,
	der         bytea,
	version     bigint NOT NULL DEFAULT 0
);
INSERT INTO minica_crl (id) VALUES (1);

CREATE TABLE minica_enrollments (
	id   text COLLATE "C" PRIMARY KEY CHECK (id ~ '^[0-9a-f]{12}$'),
	name text NOT NULL,
	seq  bigserial,
	data text NOT NULL
);
CREATE INDEX minica_enrollments_name ON minica_enrollments (name, seq);
