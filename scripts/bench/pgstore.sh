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
#   ocsp   (or replicas) three `minica serve` replicas on one database
#          against one replica, OCSP answers a second under the same
#          bounded load, each replica in a cgroup with a CPU quota of
#          its own, as on a host of its own: target 2.5x. Needs root
#          (the cgroups, v1 or v2, removed at exit) and 2 CPUs
#   list   `minica list` over the BENCH_RECORDS records: first line under
#          100 ms, peak RSS under 64 MiB
#
# Ratios are taken within each of BENCH_ROUNDS rounds (3) and the median
# is reported. See docs/performance.md ("## PostgreSQL").
#
#   scripts/bench/pgstore.sh                   full run (about 15 minutes on 2 loaded cores, 2 of them filling 10^6 rows)
#   BENCH_PARTS="batch list" scripts/bench/pgstore.sh
#   BENCH_PARTS=replicas BENCH_ROUNDS=5 scripts/bench/pgstore.sh   the replicas alone (about 4 minutes)
#   BENCH_QUICK=1 scripts/bench/pgstore.sh     smoke run: 10^4 records, small loops
#
# Settings (environment): BENCH_PARTS (any of issue, batch, ocsp and list;
# all by default), BENCH_RECORDS, BENCH_N (issuances a loop, 100),
# BENCH_BATCH, BENCH_ROUNDS, BENCH_DURATION (seconds of each OCSP load, 10),
# BENCH_CONNS (OCSP clients of each of the three load generators, 12),
# BENCH_REPLICA_QUOTA (each replica's CPU budget in cores, 0.25: three of
# them, PostgreSQL and the load generators must fit in the machine),
# BENCH_REPLICA_CPU (the CPU of the replicas, 0), BENCH_LOAD_CPUS (the CPUs
# of the load generators and PostgreSQL during that part, the others),
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
parts=${parts// replicas / ocsp }
part() { [[ $parts == *" $1 "* ]]; }
conns=${BENCH_CONNS:-12}
port0=${BENCH_PORT:-18800}
quota=${BENCH_REPLICA_QUOTA:-0.25}
ncpu=$(nproc)
replica_cpu=${BENCH_REPLICA_CPU:-0}
load_cpus=${BENCH_LOAD_CPUS:-1-$((ncpu - 1))}
[ "$load_cpus" != 1-1 ] || load_cpus=1
[[ $records =~ ^[1-9][0-9]{0,7}$ ]] || bench_die "BENCH_RECORDS must be between 1 and 99999999, not \"$records\""
[[ $n =~ ^[1-9][0-9]{0,3}$ ]] || bench_die "BENCH_N must be between 1 and 9999, not \"$n\""
[[ $batch =~ ^[1-9][0-9]{0,4}$ ]] || bench_die "BENCH_BATCH must be between 1 and 99999, not \"$batch\""
[[ $rounds =~ ^[1-9]$ ]] || bench_die "BENCH_ROUNDS must be between 1 and 9, not \"$rounds\""
[[ $dur =~ ^[1-9][0-9]{0,2}$ ]] || bench_die "BENCH_DURATION must be between 1 and 999, not \"$dur\""
[[ $conns =~ ^[1-9][0-9]{0,2}$ ]] || bench_die "BENCH_CONNS must be between 1 and 999, not \"$conns\""
for p in $parts; do [[ $p =~ ^(issue|batch|ocsp|list)$ ]] || bench_die "BENCH_PARTS takes issue, batch, ocsp (or replicas) and list, not \"$p\""; done
if part ocsp; then
	[[ $quota =~ ^0?\.[0-9]{1,3}$ ]] && awk -v q="$quota" 'BEGIN { exit !(q >= 0.05 && q <= 0.33) }' ||
		bench_die "BENCH_REPLICA_QUOTA must be a share of a core between 0.05 and 0.33 (three of them share one CPU), not \"$quota\""
	[ "$ncpu" -ge 2 ] || bench_die "the replicas part needs 2 CPUs at least: one for the replicas, one for the load and PostgreSQL"
	[[ $replica_cpu =~ ^[0-9]+$ ]] && [ "$replica_cpu" -lt "$ncpu" ] || bench_die "BENCH_REPLICA_CPU must be one CPU number below $ncpu, not \"$replica_cpu\""
	[[ $load_cpus =~ ^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$ ]] || bench_die "BENCH_LOAD_CPUS must be a CPU list as taskset takes it (1 or 1-3), not \"$load_cpus\""
	[ "$(id -u)" -eq 0 ] || bench_die "the replicas part gives each serve replica a CPU budget of its own, a cgroup CPU quota, which needs root: run it as root, or leave it out (BENCH_PARTS=\"issue batch list\")"
	bench_require taskset:util-linux
fi

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
	cg_remove
	rm -rf "$work"
}
trap cleanup EXIT

# --- CPU budgets: one cgroup with a CPU quota for each serve replica ---------
# cg_setup finds a cpu controller this root can write, cgroup v2 (cpu.max)
# first, then v1 (cpu.cfs_quota_us). cg_make NAME QUOTA_US makes a group
# of QUOTA_US microseconds of CPU every cg_period microseconds, its path
# in cg_new (not a subshell: the list of groups to remove is kept); cg_remove
# (on exit, also after a failure) moves what is left in the groups back
# to the root group and removes them.
cg_kind= cg_root= cg_groups=() cg_period=100000
cg_setup() {
	local mnt
	mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	if [ -n "$mnt" ] && grep -qw cpu "$mnt/cgroup.controllers" 2>/dev/null &&
		{ grep -qw cpu "$mnt/cgroup.subtree_control" 2>/dev/null || echo +cpu 2>/dev/null >"$mnt/cgroup.subtree_control"; }; then
		cg_kind=v2 cg_root=$mnt
		return 0
	fi
	mnt=$(awk '$3 == "cgroup" && ("," $4 ",") ~ /,cpu,/ { print $2; exit }' /proc/mounts)
	if [ -n "$mnt" ] && [ -w "$mnt/cgroup.procs" ] && [ -e "$mnt/cpu.cfs_quota_us" ]; then
		cg_kind=v1 cg_root=$mnt
		return 0
	fi
	bench_die "no writable cgroup cpu controller (cgroup v2 with cpu in cgroup.controllers, or v1 with cpu.cfs_quota_us, under /sys/fs/cgroup): the replicas need one for their CPU budgets"
}
cg_make() {
	local g=$cg_root/minica-bench-$$-$1
	mkdir "$g" 2>/dev/null || bench_die "cannot create the cgroup \"$g\""
	cg_groups+=("$g")
	if [ "$cg_kind" = v2 ]; then
		echo "$2 $cg_period" 2>/dev/null >"$g/cpu.max" || bench_die "cannot write \"$g/cpu.max\""
	else
		{ echo "$cg_period" >"$g/cpu.cfs_period_us" && echo "$2" >"$g/cpu.cfs_quota_us"; } 2>/dev/null ||
			bench_die "cannot write the CPU quota of \"$g\" (cpu.cfs_period_us, cpu.cfs_quota_us)"
	fi
	cg_new=$g
}
# cg_throttled GROUP: periods and periods throttled so far (cpu.stat).
cg_throttled() { awk '$1 == "nr_periods" { p = $2 } $1 == "nr_throttled" { t = $2 } END { print p + 0, t + 0 }' "$1/cpu.stat"; }
cg_remove() {
	local g p
	for g in "${cg_groups[@]}"; do
		[ -d "$g" ] || continue
		for p in $(cat "$g/cgroup.procs" 2>/dev/null); do echo "$p" 2>/dev/null >"$cg_root/cgroup.procs" || true; done
		rmdir "$g" 2>/dev/null || bench_log "warning: could not remove the cgroup \"$g\""
	done
}

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
#
# Replicas stand for hosts of their own: each runs in a cgroup of its own
# with a CPU quota of BENCH_REPLICA_QUOTA of a core (0.25), all on
# BENCH_REPLICA_CPU (0), so that three of them get three times the CPU of
# one whatever the machine, and the load generators and PostgreSQL run on
# the other CPUs (BENCH_LOAD_CPUS), out of the replicas' way. The figure
# holds only when every replica that is sent requests used its whole quota:
# the report says so for each load, with the CPU the generators and the
# server used.
if part ocsp; then
	cg_setup
	quota_us=$(awk -v q="$quota" -v p="$cg_period" 'BEGIN { printf "%d", q * p }')
	init_ca "$work/ca-serve" pgserve
	minica --dir "$work/ca-serve" issue client alice >/dev/null 2>&1
	alice=$(ls "$work"/ca-serve/certs/alice/*.crt | head -1)
	openssl ocsp -issuer "$work/ca-serve/ca.crt" -cert "$alice" -no_nonce -reqout "$work/cached.req" >/dev/null 2>&1
	openssl ocsp -issuer "$work/ca-serve/ca.crt" -cert "$alice" -reqout "$work/nonce.req" >/dev/null 2>&1
	bench_ports_free "$port0" 3
	# PostgreSQL moves to the load's CPUs for this part (new backends
	# inherit the postmaster's), and back at its end.
	pg_pin() {
		local p
		for p in $(head -1 "$pgdata/postmaster.pid") $(pgrep -P "$(head -1 "$pgdata/postmaster.pid")" | tr '\n' ' '); do
			taskset -a -p -c "$1" "$p" >/dev/null 2>&1 || true
		done
	}
	pg_pin "$load_cpus"
	replica_pids=() replica_cgs=()
	for i in 0 1 2; do
		cg_make "r$i" "$quota_us"
		replica_cgs+=("$cg_new")
		# The shell joins the group, then becomes minica: the process starts
		# inside its budget (Go sizes GOMAXPROCS from it and the CPU set).
		sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$cg_new" \
			taskset -c "$replica_cpu" "$work/minica" --dir "$work/ca-serve" serve --listen "127.0.0.1:$((port0 + i))" >/dev/null 2>"$work/serve-$i.log" &
		pids+=($!)
		replica_pids+=($!)
	done
	for i in 0 1 2; do bench_wait_port $((port0 + i)) 30; done
	for i in 0 1 2; do
		grep -qx "${replica_pids[$i]}" "${replica_cgs[$i]}/cgroup.procs" || bench_die "replica $i is not in its cgroup ${replica_cgs[$i]}"
		out=$(openssl ocsp -issuer "$work/ca-serve/ca.crt" -cert "$alice" -url "http://127.0.0.1:$((port0 + i))/ocsp" \
			-CAfile "$work/ca-serve/ca.crt" 2>&1) || true
		grep -q ': good$' <<<"$out" || bench_die "replica $i does not answer good for alice: $out"
	done
	: >"$work/ocsp.tsv"
	# ocsp_load ROUND KIND REPLICAS: three generators on replica 0, or one
	# on each. Appends round, kind, replicas, answers/s, failed, the
	# replicas' cores, answers per replica-core-second, the server's cores,
	# the generators' cores, the least share of its quota an active
	# replica used, the least share of its periods it was throttled in,
	# and each replica's cores.
	ocsp_load() {
		local round=$1 kind=$2 replicas=$3 i gen=() before=() thr=() pgbefore total=0 failed=0 gencpu=0
		for i in 0 1 2; do
			before+=("$(cpu_ticks "${replica_pids[$i]}")")
			thr+=("$(cg_throttled "${replica_cgs[$i]}")")
		done
		pgbefore=$(pg_cpu)
		for i in 0 1 2; do
			local port=$port0
			[ "$replicas" = 3 ] && port=$((port0 + i))
			taskset -c "$load_cpus" "$work/rate" -body "$work/$kind.req" -c "$conns" -d "${dur}s" "http://127.0.0.1:$port/ocsp" >"$work/rate-$i.out" &
			gen+=($!)
		done
		for i in 0 1 2; do wait "${gen[$i]}" || bench_die "the OCSP client failed ($kind, $replicas replicas)"; done
		local pgticks each=() used=() tfrac=() d
		pgticks=$(($(pg_cpu) - pgbefore))
		for i in 0 1 2; do
			d=$(($(cpu_ticks "${replica_pids[$i]}") - before[i]))
			# CPU over the warm-up second and the measured ones.
			each+=("$(awk -v t="$d" -v hz="$tck" -v s="$dur" 'BEGIN { printf "%.3f", t / hz / (s + 1) }')")
			tfrac+=("$(awk -v a="${thr[$i]}" -v b="$(cg_throttled "${replica_cgs[$i]}")" 'BEGIN { split(a, x, " "); split(b, y, " "); p = y[1] - x[1]; printf "%.2f", (p > 0 ? (y[2] - x[2]) / p : 0) }')")
		done
		for i in 0 1 2; do
			total=$(awk -v t="$total" -v r="$(cut -f3 "$work/rate-$i.out")" 'BEGIN { print t + r }')
			failed=$((failed + $(cut -f2 "$work/rate-$i.out")))
			# requests x microseconds of the generator's CPU a request, over the measured seconds
			gencpu=$(awk -v g="$gencpu" -v n="$(cut -f1 "$work/rate-$i.out")" -v us="$(cut -f7 "$work/rate-$i.out")" -v s="$dur" 'BEGIN { print g + n * us / 1e6 / s }')
		done
		local active=1
		[ "$replicas" = 3 ] && active=3
		awk -v r="$round" -v k="$kind" -v n="$replicas" -v rate="$total" -v f="$failed" -v p="$pgticks" -v hz="$tck" -v s="$dur" \
			-v g="$gencpu" -v q="$quota" -v a="$active" -v each="${each[*]}" -v tf="${tfrac[*]}" 'BEGIN {
				split(each, e, " "); split(tf, t, " ")
				cores = e[1] + e[2] + e[3]; minq = 9; mint = 9
				for (i = 1; i <= a; i++) { if (e[i] / q < minq) minq = e[i] / q; if (t[i] < mint) mint = t[i] }
				printf "%s\t%s\t%s\t%.0f\t%d\t%.3f\t%.0f\t%.2f\t%.2f\t%.2f\t%.2f\t%s %s %s\n", r, k, n, rate, f, cores, rate / cores,
					p / hz / (s + 1), g, minq, mint, e[1], e[2], e[3]
			}' >>"$work/ocsp.tsv"
		bench_log "round $round, $kind, $replicas replica(s): $total answers/s, $failed failed, replicas at ${each[*]} of a core (quota $quota), throttled ${tfrac[*]}"
	}
	for round in $(seq "$rounds"); do
		bench_log "OCSP round $round of $rounds: 3 x $conns clients, ${dur}s a load"
		for kind in cached nonce; do
			if ((round % 2)); then order="1 3"; else order="3 1"; fi
			for replicas in $order; do ocsp_load "$round" "$kind" "$replicas"; done
		done
	done
	pg_pin "0-$((ncpu - 1))"
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
	printf 'replicas: a cgroup (%s) each with a CPU quota of %s core (%s us every %s us), on CPU %s; load generators and PostgreSQL on CPUs %s\n\n' \
		"$cg_kind" "$quota" "$quota_us" "$cg_period" "$replica_cpu" "$load_cpus"
	printf '%-5s %-7s %8s %10s %7s %9s %14s %9s %9s %10s %10s  %s\n' round request replicas answers/s failed "replica" "answers/s" "server" "load gen" "least use" "least" "each replica's"
	printf '%-5s %-7s %8s %10s %7s %9s %14s %9s %9s %10s %10s  %s\n' "" "" "" "" "" cores "/replica-core" cores cores "of quota" throttled cores
	awk -F '\t' '{ printf "%-5s %-7s %8s %10s %7s %9s %14s %9s %9s %10s %10s  %s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12 }' "$work/ocsp.tsv"
	ov() { awk -F '\t' -v r="$1" -v k="$2" -v n="$3" -v c="$4" '$1 == r && $2 == k && $3 == n { print $c }' "$work/ocsp.tsv"; }
	echo
	# A replica short of its quota was not the limit: the load, the server or
	# the machine was, and the ratio says nothing of the replicas.
	short=$(awk -F '\t' '$10 < 0.9 { printf "round %s %s with %s: %s of the quota; ", $1, $2, $3, $10 }' "$work/ocsp.tsv")
	[ -z "$short" ] || printf 'WARNING: a replica sent requests used less than 0.9 of its CPU quota (%s): that ratio measures the load side or the machine, not the replicas\n\n' "${short%; }"
	for kind in cached nonce; do
		for round in $(seq "$rounds"); do ratio "$(ov "$round" "$kind" 3 4)" "$(ov "$round" "$kind" 1 4)"; echo; done >"$work/ocsp-$kind.ratios"
		for round in $(seq "$rounds"); do ratio "$(ov "$round" "$kind" 3 7)" "$(ov "$round" "$kind" 1 7)"; echo; done >"$work/ocsp-$kind.core"
		r=$(median <"$work/ocsp-$kind.ratios")
		printf 'OCSP %-7s 3 replicas / 1: answers/s by round %s, median %sx; answers per replica-core-second by round %s, median %sx\n' "$kind" \
			"$(paste -sd' ' "$work/ocsp-$kind.ratios")" "$r" "$(paste -sd' ' "$work/ocsp-$kind.core")" "$(median <"$work/ocsp-$kind.core")"
		v=$(bench_verdict "$r" ">=" 2.5)
		if [ -n "$short" ]; then
			# The rounds in which both loads of this kind kept their replicas at quota.
			ok=$(for round in $(seq "$rounds"); do
				[ "$(awk -F '\t' -v r="$round" -v k="$kind" '$1 == r && $2 == k && $10 < 0.9 { n++ } END { print n + 0 }' "$work/ocsp.tsv")" = 0 ] &&
					sed -n "${round}p" "$work/ocsp-$kind.ratios"
			done)
			if [ -n "$ok" ]; then
				r=$(median <<<"$ok")
				printf 'OCSP %-7s over the %d round(s) with every replica at its quota: answers/s %s, median %sx\n' "$kind" "$(wc -l <<<"$ok")" "$(paste -sd' ' <<<"$ok")" "$r"
				v="$(bench_verdict "$r" ">=" 2.5) over the rounds at quota ($(wc -l <<<"$ok") of $rounds)"
			else
				v="not valid: no round kept every replica at its quota"
			fi
		fi
		verdicts+=("OCSP ($kind) 3 replicas >= 2.5x one, at $quota core each: $v")
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
