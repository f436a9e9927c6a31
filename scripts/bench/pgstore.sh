#!/usr/bin/env bash
# minica on its PostgreSQL store, in one run against a PostgreSQL server the
# script starts itself (initdb in the work directory, a Unix socket there,
# no TCP port; as the user nobody when run as root) and stops on exit:
#
#   issue  one `minica issue client` process per certificate, BENCH_N of
#          them, into a store with BENCH_RECORDS records (default 10^6)
#          and into an empty one: target within 10%
#   batch  `issue client --from` of BENCH_BATCH rows (1,000) into
#          PostgreSQL and into the CA directory's files: target within 2x
#   ocsp   three `minica serve` replicas on one database against one
#          replica, OCSP answers a second under the same bounded load:
#          target 2.5x
#   list   `minica list` over the BENCH_RECORDS records: first line under
#          100 ms, peak RSS under 64 MiB
#
# Ratios are taken within each of BENCH_ROUNDS rounds (3) and the median
# is reported. See docs/performance.md ("## PostgreSQL").
#
#   scripts/bench/pgstore.sh                   full run (about 15 minutes on 2 loaded cores, 2 of them filling 10^6 rows)
#   BENCH_PARTS="batch list" scripts/bench/pgstore.sh
#   BENCH_QUICK=1 scripts/bench/pgstore.sh     smoke run: 10^4 records, small loops
#
# Settings (environment): BENCH_PARTS (any of issue, batch, ocsp and list;
# all by default), BENCH_RECORDS, BENCH_N (issuances a loop, 100),
# BENCH_BATCH, BENCH_ROUNDS, BENCH_DURATION (seconds of each OCSP load, 10),
# BENCH_CONNS (OCSP clients of each of the three load generators, 4),
# BENCH_PORT (first of 3 loopback ports, 18800), BENCH_PG_BIN (the
# directory of initdb, pg_ctl and postgres; found in PATH or
# /usr/lib/postgresql/*/bin otherwise), BENCH_MINICA (a minica binary to use
# instead of building ./cmd/minica).
set -euo pipefail
cd "$(dirname "$0")/../.."

# shellcheck source=scripts/bench/lib.sh
. scripts/bench/lib.sh
set -E
trap 'bench_log "error: line $LINENO: \"$BASH_COMMAND\" failed"' ERR

if [ -n "${BENCH_QUICK:-}" ]; then
	records=${BENCH_RECORDS:-10000} n=${BENCH_N:-10} batch=${BENCH_BATCH:-100} rounds=${BENCH_ROUNDS:-1} dur=${BENCH_DURATION:-2}
else
	records=${BENCH_RECORDS:-1000000} n=${BENCH_N:-100} batch=${BENCH_BATCH:-1000} rounds=${BENCH_ROUNDS:-3} dur=${BENCH_DURATION:-10}
fi
parts=" ${BENCH_PARTS:-issue batch ocsp list} "
part() { [[ $parts == *" $1 "* ]]; }
conns=${BENCH_CONNS:-4}
port0=${BENCH_PORT:-18800}
[[ $records =~ ^[1-9][0-9]{0,7}$ ]] || bench_die "BENCH_RECORDS must be between 1 and 99999999, not \"$records\""
[[ $n =~ ^[1-9][0-9]{0,3}$ ]] || bench_die "BENCH_N must be between 1 and 9999, not \"$n\""
[[ $batch =~ ^[1-9][0-9]{0,4}$ ]] || bench_die "BENCH_BATCH must be between 1 and 99999, not \"$batch\""
[[ $rounds =~ ^[1-9]$ ]] || bench_die "BENCH_ROUNDS must be between 1 and 9, not \"$rounds\""
[[ $dur =~ ^[1-9][0-9]{0,2}$ ]] || bench_die "BENCH_DURATION must be between 1 and 999, not \"$dur\""
[[ $conns =~ ^[1-9][0-9]{0,2}$ ]] || bench_die "BENCH_CONNS must be between 1 and 999, not \"$conns\""
for p in $parts; do [[ $p =~ ^(issue|batch|ocsp|list)$ ]] || bench_die "BENCH_PARTS takes issue, batch, ocsp and list, not \"$p\""; done

bench_require psql:postgresql-client openssl:openssl
pgbin=${BENCH_PG_BIN:-}
if [ -z "$pgbin" ]; then
	if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
		pgbin=$(dirname "$(command -v pg_ctl)")
	else
		pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
	fi
fi
[ -x "$pgbin/initdb" ] && [ -x "$pgbin/pg_ctl" ] || bench_die "initdb and pg_ctl not found (install postgresql, or set BENCH_PG_BIN)"
command -v go >/dev/null 2>&1 || bench_die "go is needed to build minica (see go.mod for the version)"

bench_tmpdir
work=$BENCH_TMP
pids=()
pgdata=$work/pg/data
# as_pg runs a command as the server's user: initdb and postgres refuse root.
as_pg() { if [ "$(id -u)" -eq 0 ]; then setpriv --reuid nobody --regid nogroup --clear-groups -- "$@"; else "$@"; fi; }
cleanup() {
	local pid
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	[ -f "$pgdata/postmaster.pid" ] && as_pg "$pgbin/pg_ctl" -D "$pgdata" -m fast -w -t 60 stop >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT

bench_log "building"
if [ -n "${BENCH_MINICA:-}" ]; then cp "$BENCH_MINICA" "$work/minica"; else go build -o "$work/minica" ./cmd/minica; fi
go build -o "$work/first" ./scripts/bench/pgstore
go build -o "$work/rate" ./scripts/bench/serve/rate
minica() { "$work/minica" "$@"; }

# --- the server --------------------------------------------------------------
# PostgreSQL's defaults, durability included (fsync, synchronous_commit):
# the store's commits cost what they cost in production.
bench_log "starting PostgreSQL ($("$pgbin/postgres" --version))"
mkdir -p "$work/pg"
chmod a+x "$work"
[ "$(id -u)" -ne 0 ] || chown nobody:nogroup "$work/pg"
as_pg "$pgbin/initdb" -D "$pgdata" -U postgres --auth=trust --encoding=UTF8 --locale=C >"$work/pg/initdb.log" 2>&1 ||
	bench_die "initdb failed: $(tail -5 "$work/pg/initdb.log")"
as_pg "$pgbin/pg_ctl" -D "$pgdata" -l "$work/pg/log" -w -t 60 -o "-c listen_addresses= -k $work/pg" start >/dev/null ||
	bench_die "PostgreSQL did not start: $(tail -5 "$work/pg/log")"
sql() { psql -h "$work/pg" -U postgres -X -q -v ON_ERROR_STOP=1 "$@"; }
store() { echo "postgres://postgres@/$1?host=$work/pg"; }
newdb() { sql -d postgres -c "CREATE DATABASE $1"; }
# pg_cpu: CPU ticks of every process of the server: the postmaster, with
# the backends that exited (its children's time), and the live ones.
pg_cpu() {
	local pm p t
	pm=$(head -1 "$pgdata/postmaster.pid")
	t=$(awk '{ print $14 + $15 + $16 + $17 }' "/proc/$pm/stat")
	for p in $(pgrep -P "$pm" | tr '\n' ' '); do t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0))); done
	echo "$t"
}
cpu_ticks() { # PID...
	local p t=0
	for p in "$@"; do t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0))); done
	echo "$t"
}
tck=$(getconf CLK_TCK)
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
spread() { sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo " to " hi }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
# init_ca DIR DB: a CA whose store is the new database DB ("" for the files).
init_ca() {
	if [ -n "$2" ]; then
		newdb "$2"
		minica --dir "$1" --store "$(store "$2")" init --cn "Bench PG CA" --no-password >/dev/null
	else
		minica --dir "$1" init --cn "Bench file CA" --no-password >/dev/null
	fi
}

# fill DB COUNT: COUNT records in one INSERT ... SELECT, as the store writes
# them (the data column is the record's JSON line, with the record's
# fields), of 200,000 names (5 records each, as renewals leave them),
# issued one a minute up to now, each valid for a year, so that half of them
# have expired. Serials are distinct (the primary key would refuse a
# duplicate) and, as minica's, positive and 159 bits at most. No
# certificate file is written: `minica check` would report them all.
fill() {
	sql -d "$1" -v n="$2" <<-'EOF'
		INSERT INTO minica_records (serial, name, status, issued_at, data)
		SELECT serial, name, 'valid', at,
			format('{"serial":"%s","name":"%s","profile":"client","status":"valid","subject":"CN=%s","not_before":"%s","not_after":"%s","sha256":"%s","has_key":true,"issued_at":"%s"}',
				serial, name, name,
				to_char((at - interval '5 minutes') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
				to_char((at - interval '5 minutes' + interval '1 year') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
				encode(sha256(convert_to(serial, 'UTF8')), 'hex'),
				to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')) || E'\n'
		FROM (SELECT to_hex(i % 8) || substr(md5('minica-fill-' || i), 2) AS serial,
				'svc-' || (i % 200000) AS name,
				date_trunc('second', now()) - (:n - i) * interval '1 minute' AS at
			FROM generate_series(1, :n) AS i) AS g;
		VACUUM ANALYZE minica_records;
	EOF
}

# The queries an issuance sends, as EXPLAIN shows them over the filled table.
explain() {
	sql -d "$1" -At <<-'EOF'
		SET jit = off;
		EXPLAIN SELECT serial, data FROM minica_records WHERE name = 'svc-7' AND status <> 'void' ORDER BY issued_at, serial;
		EXPLAIN SELECT data FROM minica_records WHERE serial = '0123456789abcdef0123456789abcdef';
		EXPLAIN INSERT INTO minica_records (serial, name, status, issued_at, data) VALUES ('0123456789abcdef0123456789abcdef', 'x', 'pending', now(), '')
			ON CONFLICT (serial) DO UPDATE SET name = EXCLUDED.name, status = EXCLUDED.status, issued_at = EXCLUDED.issued_at, data = EXCLUDED.data;
	EOF
}

needfull=
part issue && needfull=1
part list && needfull=1
if [ -n "$needfull" ]; then
	init_ca "$work/ca-empty" pgempty
	init_ca "$work/ca-full" pgfull
	bench_log "filling $records records"
	start=$(bench_now_ns)
	fill pgfull "$records"
	fill_s=$(awk -v s="$start" -v e="$(bench_now_ns)" 'BEGIN { printf "%.0f", (e - s) / 1e9 }')
	got=$(sql -d pgfull -Atc "SELECT count(*) FROM minica_records")
	[ "$got" -eq "$records" ] || bench_die "the store holds $got records, not $records"
	line=$(minica --dir "$work/ca-full" list 2>&1 | head -1 || true)
	[[ $line == *svc-* ]] || bench_die "list cannot read the filled records: $line"
	explain pgfull >"$work/explain.txt"
	sql -d pgfull -Atc "SET jit = off; EXPLAIN SELECT serial, data FROM minica_records ORDER BY serial" >"$work/explain-list.txt"
	if grep -q 'Seq Scan' "$work/explain.txt"; then bench_die "a query of issuance scans the table: $(cat "$work/explain.txt")"; fi
	bench_log "filled in ${fill_s}s: $(sql -d pgfull -Atc "SELECT pg_size_pretty(pg_total_relation_size('minica_records'))") with its indexes"
fi

# --- issue: N processes into 10^6 records and into none ----------------------
# issue_loop DIR PREFIX COUNT
issue_loop() {
	local i
	for ((i = 1; i <= $3; i++)); do "$work/minica" --dir "$1" issue client "$2-$i" >/dev/null 2>&1 || return 1; done
}
export -f issue_loop
export work
if part issue; then
	for round in $(seq "$rounds"); do
		bench_log "issue round $round of $rounds: $n certificates into each store"
		# The order alternates, so that neither store always runs second.
		if ((round % 2)); then order="empty full"; else order="full empty"; fi
		for which in $order; do
			before=$(pg_cpu)
			bench_measure "issue-$which-$round" "issue, $which store" "$n" issue_loop "$work/ca-$which" "r$round" "$n"
			echo "$(($(pg_cpu) - before))" >"$work/issue-$which-$round.pgcpu"
		done
	done
fi

# --- batch: issue --from into PostgreSQL and into files ----------------------
batch_run() { "$work/minica" --dir "$1" issue client --from "$2" >/dev/null; }
export -f batch_run
if part batch; then
	{
		echo name
		for ((i = 1; i <= batch; i++)); do echo "b$i"; done
	} >"$work/batch.csv"
	for round in $(seq "$rounds"); do
		bench_log "batch round $round of $rounds: $batch certificates into each store"
		init_ca "$work/ca-batch-pg-$round" "pgbatch$round"
		init_ca "$work/ca-batch-file-$round" ""
		if ((round % 2)); then order="pg file"; else order="file pg"; fi
		for which in $order; do
			before=$(pg_cpu)
			bench_measure "batch-$which-$round" "issue --from, $which" "$batch" batch_run "$work/ca-batch-$which-$round" "$work/batch.csv"
			echo "$(($(pg_cpu) - before))" >"$work/batch-$which-$round.pgcpu"
		done
		got=$(sql -d "pgbatch$round" -Atc "SELECT count(*) FROM minica_records WHERE status = 'valid'")
		[ "$got" -eq "$batch" ] || bench_die "the batch left $got valid records, not $batch"
	done
fi

# --- ocsp: three replicas against one ----------------------------------------
# Every replica serves the same CA directory and database, as replicas on
# several hosts would with a copy of the directory each. Two requests: one
# without a nonce (serve answers it from its cache of signed responses: the
# database is not asked) and one with a nonce (every answer reads the record
# from the database and is signed afresh). The load is the same in both
# set-ups: three load generators of BENCH_CONNS clients each, for
# BENCH_DURATION seconds; against one replica all three send to it.
if part ocsp; then
	init_ca "$work/ca-serve" pgserve
	minica --dir "$work/ca-serve" issue client alice >/dev/null 2>&1
	alice=$(ls "$work"/ca-serve/certs/alice/*.crt | head -1)
	openssl ocsp -issuer "$work/ca-serve/ca.crt" -cert "$alice" -no_nonce -reqout "$work/cached.req" >/dev/null 2>&1
	openssl ocsp -issuer "$work/ca-serve/ca.crt" -cert "$alice" -reqout "$work/nonce.req" >/dev/null 2>&1
	bench_ports_free "$port0" 3
	replica_pids=()
	for i in 0 1 2; do
		"$work/minica" --dir "$work/ca-serve" serve --listen "127.0.0.1:$((port0 + i))" >/dev/null 2>"$work/serve-$i.log" &
		pids+=($!)
		replica_pids+=($!)
	done
	for i in 0 1 2; do bench_wait_port $((port0 + i)) 30; done
	for i in 0 1 2; do
		out=$(openssl ocsp -issuer "$work/ca-serve/ca.crt" -cert "$alice" -url "http://127.0.0.1:$((port0 + i))/ocsp" \
			-CAfile "$work/ca-serve/ca.crt" 2>&1) || true
		grep -q ': good$' <<<"$out" || bench_die "replica $i does not answer good for alice: $out"
	done
	: >"$work/ocsp.tsv"
	# ocsp_load ROUND KIND REPLICAS: three generators on replica 0, or one on each.
	ocsp_load() {
		local round=$1 kind=$2 replicas=$3 i gen=() before pgbefore total=0 failed=0 out
		before=$(cpu_ticks "${replica_pids[@]}")
		pgbefore=$(pg_cpu)
		for i in 0 1 2; do
			local port=$port0
			[ "$replicas" = 3 ] && port=$((port0 + i))
			"$work/rate" -body "$work/$kind.req" -c "$conns" -d "${dur}s" "http://127.0.0.1:$port/ocsp" >"$work/rate-$i.out" &
			gen+=($!)
		done
		for i in 0 1 2; do wait "${gen[$i]}" || bench_die "the OCSP client failed ($kind, $replicas replicas)"; done
		local ticks pgticks
		ticks=$(($(cpu_ticks "${replica_pids[@]}") - before))
		pgticks=$(($(pg_cpu) - pgbefore))
		for i in 0 1 2; do
			total=$(awk -v t="$total" -v r="$(cut -f3 "$work/rate-$i.out")" 'BEGIN { print t + r }')
			failed=$((failed + $(cut -f2 "$work/rate-$i.out")))
		done
		# CPU per answer: the warm-up second is inside the CPU time, charged to the measured answers.
		awk -v r="$round" -v k="$kind" -v n="$replicas" -v rate="$total" -v f="$failed" -v t="$ticks" -v p="$pgticks" -v hz="$tck" -v d="$dur" \
			'BEGIN { cores = t / hz / (d + 1); printf "%s\t%s\t%s\t%.0f\t%d\t%.2f\t%.0f\t%.2f\n", r, k, n, rate, f, cores, rate / cores, p / hz / (d + 1) }' >>"$work/ocsp.tsv"
		bench_log "round $round, $kind, $replicas replica(s): $total answers/s, $failed failed"
	}
	for round in $(seq "$rounds"); do
		bench_log "OCSP round $round of $rounds: 3 x $conns clients, ${dur}s a load"
		for kind in cached nonce; do
			if ((round % 2)); then order="1 3"; else order="3 1"; fi
			for replicas in $order; do ocsp_load "$round" "$kind" "$replicas"; done
		done
	done
fi

# --- list over the filled store ----------------------------------------------
if part list; then
	: >"$work/list.tsv"
	for round in $(seq "$rounds"); do
		bench_log "list round $round of $rounds"
		sync
		"$work/first" -timeout 10m -- "$work/minica" --dir "$work/ca-full" list >>"$work/list.tsv"
	done
	got=$(awk -F '\t' 'NR == 1 { print $3 }' "$work/list.tsv")
	[ "$got" -ge "$records" ] || bench_die "list printed $got lines, not the $records records at least"
fi

# --- report ------------------------------------------------------------------
echo
bench_machine | grep -v '^tools'
printf 'load:    %s (1, 5 and 15 minutes) at the end\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
printf 'server:  %s, defaults (fsync on, synchronous_commit on), Unix socket\n' "$("$pgbin/postgres" --version)"
[ -z "$needfull" ] || printf 'filled:  %d records in %ss (INSERT ... SELECT generate_series + VACUUM ANALYZE)\n' "$records" "$fill_s"
echo
verdicts=()
if [ -n "$needfull" ]; then
	echo "EXPLAIN of the queries of an issuance, and of list, over $records records:"
	grep -E '^[A-Z]|->' "$work/explain.txt" | grep -v '^Conflict\|^ *->  Result' | sed 's/^/  issue: /'
	grep -E '^[A-Z]|->' "$work/explain-list.txt" | sed 's/^/  list:  /'
	echo
fi
if part issue; then
	bench_table '^issue-'
	for round in $(seq "$rounds"); do
		ratio "$(bench_get "issue-full-$round" wall)" "$(bench_get "issue-empty-$round" wall)"
		echo
	done >"$work/issue.ratios"
	r=$(median <"$work/issue.ratios")
	printf '\nissue, %d records / none, wall per certificate: median %sx (%s)\n' "$records" "$r" "$(spread <"$work/issue.ratios")"
	# CPU per certificate, minica's and the server's: what the load on the machine disturbs least.
	for round in $(seq "$rounds"); do
		awk -v a="$(bench_get "issue-full-$round" cpu)" -v b="$(bench_get "issue-empty-$round" cpu)" \
			-v pa="$(cat "$work/issue-full-$round.pgcpu")" -v pb="$(cat "$work/issue-empty-$round.pgcpu")" -v hz="$tck" \
			'BEGIN { printf "%.3f\n", (a + pa / hz) / (b + pb / hz) }'
	done >"$work/issue.cpuratios"
	for which in empty full; do
		for round in $(seq "$rounds"); do awk -v t="$(cat "$work/issue-$which-$round.pgcpu")" -v hz="$tck" -v n="$n" 'BEGIN { printf "%.2f\n", 1000 * t / hz / n }'; done |
			median | xargs printf 'issue, %s store: the server'"'"'s CPU median %s ms a certificate\n' "$which"
	done
	printf 'issue, %d records / none, CPU (minica + server) per certificate: median %sx (%s)\n\n' "$records" \
		"$(median <"$work/issue.cpuratios")" "$(spread <"$work/issue.cpuratios")"
	verdicts+=("issue with $records records within 10% of none: $(bench_verdict "$r" "<=" 1.10)")
fi
if part batch; then
	bench_table '^batch-'
	for round in $(seq "$rounds"); do
		ratio "$(bench_get "batch-pg-$round" wall)" "$(bench_get "batch-file-$round" wall)"
		echo
	done >"$work/batch.ratios"
	r=$(median <"$work/batch.ratios")
	pgcpu=$(for round in $(seq "$rounds"); do awk -v t="$(cat "$work/batch-pg-$round.pgcpu")" -v hz="$tck" -v n="$batch" 'BEGIN { printf "%.2f\n", 1000 * t / hz / n }'; done | median)
	printf '\nbatch of %d, PostgreSQL / files, wall: median %sx (%s); the server'"'"'s CPU: %s ms a certificate\n\n' "$batch" "$r" "$(spread <"$work/batch.ratios")" "$pgcpu"
	verdicts+=("batch of $batch within 2x of the files: $(bench_verdict "$r" "<=" 2)")
fi
if part ocsp; then
	printf '%-5s %-7s %8s %10s %7s %14s %16s %11s\n' round request replicas answers/s failed "replica cores" "answers/s/core" "server cores"
	awk -F '\t' '{ printf "%-5s %-7s %8s %10s %7s %14s %16s %11s\n", $1, $2, $3, $4, $5, $6, $7, $8 }' "$work/ocsp.tsv"
	ov() { awk -F '\t' -v r="$1" -v k="$2" -v n="$3" -v c="$4" '$1 == r && $2 == k && $3 == n { print $c }' "$work/ocsp.tsv"; }
	echo
	for kind in cached nonce; do
		for round in $(seq "$rounds"); do ratio "$(ov "$round" "$kind" 3 4)" "$(ov "$round" "$kind" 1 4)"; echo; done >"$work/ocsp-$kind.ratios"
		for round in $(seq "$rounds"); do ratio "$(ov "$round" "$kind" 3 7)" "$(ov "$round" "$kind" 1 7)"; echo; done >"$work/ocsp-$kind.core"
		r=$(median <"$work/ocsp-$kind.ratios")
		printf 'OCSP %-7s 3 replicas / 1: answers/s median %sx (%s); answers per replica-core-second median %sx (%s)\n' "$kind" \
			"$r" "$(spread <"$work/ocsp-$kind.ratios")" "$(median <"$work/ocsp-$kind.core")" "$(spread <"$work/ocsp-$kind.core")"
		verdicts+=("OCSP ($kind) 3 replicas >= 2.5x one: $(bench_verdict "$r" ">=" 2.5)")
	done
	echo
fi
if part list; then
	printf '%-5s %14s %10s %10s %12s\n' round "first line ms" "total s" lines "peak RSS"
	awk -F '\t' '{ printf "%-5s %14s %10s %10s %8.1f MiB\n", NR, $1, $2, $3, $4 / 1024 }' "$work/list.tsv"
	first=$(cut -f1 "$work/list.tsv" | median)
	rss=$(cut -f4 "$work/list.tsv" | median)
	printf '\nlist over %d records: first line median %s ms (%s), peak RSS median %s MiB\n\n' "$records" "$first" \
		"$(cut -f1 "$work/list.tsv" | spread)" "$(awk -v r="$rss" 'BEGIN { printf "%.1f", r / 1024 }')"
	verdicts+=("list first line < 100 ms: $(bench_verdict "$first" "<=" 99.999)" "list peak RSS < 64 MiB: $(bench_verdict "$rss" "<=" 65535)")
fi
printf 'target: %s\n' "${verdicts[@]}"
