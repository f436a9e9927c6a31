#!/usr/bin/env bash
# Benchmarks client certificate issuance, one process per certificate as a
# shell loop would run it: minica, openssl req + openssl ca (ECDSA P-256 and
# RSA-2048) and easy-rsa 3 (build-client-full NAME nopass), in the same run.
# Then it measures minica issue against a database of BENCH_RECORDS records
# and `minica list` over it, and batch issuance: BENCH_BATCH_N client
# certificates by one `minica issue client --from`, against the same openssl
# loop, easy-rsa, one `openssl ca -infiles` over BENCH_BATCH_N CSRs made by
# `openssl req` (their keys included), and the in-process Go floors without
# fsync (ca's BenchmarkBatchFloor); then the peak RSS of BENCH_P12_N
# certificates issued with --p12.
#
# Usage: scripts/bench/issue.sh ["N1 N2 ..."]
#
#	BENCH_N             certificates per loop (default "100 1000"; the argument wins)
#	BENCH_QUICK=1       smoke run: N=20, 10000 records, one round
#	BENCH_PEER_ROUNDS   rounds of the side-by-side loops (default 3; the ratios
#	                    compare medians)
#	BENCH_EASYRSA_MAX   largest N timed for easy-rsa (default 100: at about 0.15 s
#	                    a certificate, N=1000 alone would take minutes); larger N
#	                    are skipped and their ratios use the largest N that ran
#	BENCH_RECORDS       records in the large database (default 1000000)
#	BENCH_GROWTH_N      certificates per round in the database-size test (default 100)
#	BENCH_ROUNDS        rounds of the database-size test (default 5)
#	BENCH_BATCH_N       certificates of the batch case (default 1000)
#	BENCH_P12_N         certificates of the batch with --p12 (default 10000)
#	BENCH_PARTS         what to run: any of "peers", "database" and "batch"
#	                    (default: all three)
#	BENCH_SETTLE        seconds to wait before each round of the side-by-side
#	                    loops (default 60; see settle)
#
# It works in a temporary directory under TMPDIR, builds minica there and
# removes everything on exit. As root on Debian it installs openssl,
# easy-rsa and time when they are missing. Go must be on PATH.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=scripts/bench/lib.sh
. "$here/lib.sh"

if [ "${BENCH_QUICK:-0}" = 1 ]; then
	: "${BENCH_N:=20}" "${BENCH_RECORDS:=10000}" "${BENCH_GROWTH_N:=20}" "${BENCH_ROUNDS:=1}" "${BENCH_PEER_ROUNDS:=1}" "${BENCH_SETTLE:=0}"
	: "${BENCH_BATCH_N:=50}" "${BENCH_P12_N:=100}"
fi
counts=${1:-${BENCH_N:-100 1000}}
easyrsa_max=${BENCH_EASYRSA_MAX:-100}
records=${BENCH_RECORDS:-1000000}
growth_n=${BENCH_GROWTH_N:-100}
rounds=${BENCH_ROUNDS:-5}
peer_rounds=${BENCH_PEER_ROUNDS:-3}
batch_n=${BENCH_BATCH_N:-1000}
p12_n=${BENCH_P12_N:-10000}
parts=${BENCH_PARTS:-peers database batch}
settle_s=${BENCH_SETTLE:-60}
case " $parts " in
*" peers "* | *" database "* | *" batch "*) ;;
*) bench_die "BENCH_PARTS must name peers, database or batch, got \"$parts\"" ;;
esac
has_part() { case " $parts " in *" $1 "*) return 0 ;; esac; return 1; }
case $settle_s in
'' | *[!0-9]*) bench_die "BENCH_SETTLE must be a number of seconds, got \"$settle_s\"" ;;
esac
for v in $counts $easyrsa_max $records $growth_n $rounds $peer_rounds $batch_n $p12_n; do
	case $v in
	'' | *[!0-9]*) bench_die "counts must be positive integers, got \"$v\"" ;;
	esac
	[ "$v" -gt 0 ] || bench_die "counts must be positive integers, got \"$v\""
done

EASYRSA=/usr/share/easy-rsa/easyrsa
command -v go >/dev/null 2>&1 || bench_die "go is not on PATH (it builds minica)"
bench_require openssl:openssl "$EASYRSA":easy-rsa /usr/bin/time:time
bench_tmpdir
export MINICA=$BENCH_TMP/minica EASYRSA

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
bench_log "building minica and fill in $BENCH_TMP (load average $load_start)"
(cd "$repo" && bash scripts/build.sh "$MINICA" && go build -o "$BENCH_TMP/fill" ./scripts/bench/fill &&
	go test -c -o "$BENCH_TMP/ca.test" ./ca)

# --- loops: one process (or openssl pair) per certificate -------------------

# loop_minica DIR N PREFIX [FLAGS...] issues N client certificates.
loop_minica() {
	local dir=$1 n=$2 prefix=$3 i
	shift 3
	for ((i = 1; i <= n; i++)); do
		"$MINICA" --dir "$dir" issue client "$prefix$i" "$@" >/dev/null 2>>"$dir.err" ||
			{ cat "$dir.err" >&2; return 1; }
	done
}

# loop_openssl DIR N PREFIX NEWKEY... issues N client certificates with
# openssl req (a new key and CSR) and openssl ca (signing, index.txt).
loop_openssl() {
	local dir=$1 n=$2 prefix=$3 i name
	shift 3
	for ((i = 1; i <= n; i++)); do
		name=$prefix$i
		if ! openssl req -new "$@" -nodes -keyout "$dir/out/$name.key" -subj "/CN=$name" \
			-out "$dir/out/$name.csr" 2>>"$dir.err" ||
			! openssl ca -batch -config "$dir/ca.cnf" -in "$dir/out/$name.csr" \
				-out "$dir/out/$name.crt" 2>>"$dir.err"; then
			cat "$dir.err" >&2
			return 1
		fi
	done
}

# loop_easyrsa PKI N PREFIX issues N client certificates with easy-rsa.
loop_easyrsa() {
	local pki=$1 n=$2 prefix=$3 i
	for ((i = 1; i <= n; i++)); do
		EASYRSA_PKI=$pki "$EASYRSA" build-client-full "$prefix$i" nopass >/dev/null 2>>"$pki.err" ||
			{ cat "$pki.err" >&2; return 1; }
	done
}
# batch_minica DIR FILE [FLAGS...] issues a batch of client certificates
# in one process.
batch_minica() {
	local dir=$1 file=$2
	shift 2
	"$MINICA" --dir "$dir" issue client --from "$file" "$@" >/dev/null 2>>"$dir.err" ||
		{ cat "$dir.err" >&2; return 1; }
}

# infiles_openssl DIR N PREFIX NEWKEY... makes N keys and CSRs with openssl
# req, one process each, then signs them all with one openssl ca -infiles.
infiles_openssl() {
	local dir=$1 n=$2 prefix=$3 i
	shift 3
	for ((i = 1; i <= n; i++)); do
		openssl req -new "$@" -nodes -keyout "$dir/out/$prefix$i.key" -subj "/CN=$prefix$i" \
			-out "$dir/out/$prefix$i.csr" 2>>"$dir.err" || { cat "$dir.err" >&2; return 1; }
	done
	openssl ca -batch -config "$dir/ca.cnf" -out "$dir/out/all.crt" -infiles "$dir"/out/*.csr 2>>"$dir.err" ||
		{ cat "$dir.err" >&2; return 1; }
}
export -f loop_minica loop_openssl loop_easyrsa batch_minica infiles_openssl

# --- set-up: a fresh CA per measurement, not timed ---------------------------

# new_minica DIR KEYTYPE creates a minica CA.
new_minica() {
	"$MINICA" --dir "$1" init --cn "Bench CA" --no-password --key-type "$2" >/dev/null
}

# new_openssl DIR NEWKEY... creates an openssl CA: a self-signed root and a
# minimal `openssl ca` configuration for client certificates.
new_openssl() {
	local dir=$1
	shift
	mkdir -p "$dir/out" "$dir/newcerts"
	: >"$dir/index.txt"
	openssl rand -hex 16 >"$dir/serial"
	cat >"$dir/ca.cnf" <<-EOF
		[ ca ]
		default_ca = bench_ca

		[ bench_ca ]
		dir              = $dir
		database         = \$dir/index.txt
		serial           = \$dir/serial
		new_certs_dir    = \$dir/newcerts
		certificate      = \$dir/ca.crt
		private_key      = \$dir/ca.key
		default_md       = sha256
		default_days     = 365
		policy           = policy_anything
		x509_extensions  = client_ext
		unique_subject   = no
		copy_extensions  = none
		email_in_dn      = no

		[ policy_anything ]
		countryName            = optional
		stateOrProvinceName    = optional
		localityName           = optional
		organizationName       = optional
		organizationalUnitName = optional
		commonName             = supplied
		emailAddress           = optional

		[ client_ext ]
		basicConstraints       = critical, CA:FALSE
		keyUsage               = critical, digitalSignature
		extendedKeyUsage       = clientAuth
		subjectKeyIdentifier   = hash
		authorityKeyIdentifier = keyid
	EOF
	openssl req -x509 "$@" -nodes -keyout "$dir/ca.key" -out "$dir/ca.crt" -subj "/CN=Bench CA" \
		-days 3650 -addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
}

# new_easyrsa PKI creates an easy-rsa PKI with an EC P-256 CA.
new_easyrsa() {
	EASYRSA_PKI=$1 "$EASYRSA" init-pki >/dev/null 2>&1
	EASYRSA_PKI=$1 EASYRSA_REQ_CN="Bench CA" "$EASYRSA" build-ca nopass >/dev/null 2>&1
}
export EASYRSA_BATCH=1 EASYRSA_ALGO=ec EASYRSA_CURVE=prime256v1

ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256)
rsa=(-newkey rsa:2048)

# --- part 1: the peers side by side -------------------------------------------

# settle syncs and waits $settle_s seconds. On ext4 without a journal the
# inode allocator skips, at every allocation, each inode freed in the last
# minute (it reads the inode's deletion time to tell), so a loop that
# follows one that freed thousands of inodes pays for them: easy-rsa frees
# about ten a certificate (its temporary files), `openssl ca` three (the
# index and serial files it replaces), and building minica frees the Go
# build's. Waiting at the start of each round lets them age out, so that
# no tool pays for another's.
settle() {
	[ "$settle_s" -gt 0 ] || return 0
	sync
	bench_log "waiting ${settle_s}s for the inodes freed by earlier loops to age out"
	sleep "$settle_s"
}

# run_peers times every tool at every N, $peer_rounds times, each time in a
# fresh CA. The CAs stay until the script exits: deleting thousands of files
# just before a loop slows the next tool's file creation (ext4 without a
# journal skips inodes freed in the last minute when it allocates one).
run_peers() {
	local n d r
	easyrsa_ran=0
	for n in $counts; do
		for ((r = 1; r <= peer_rounds; r++)); do
			d=$BENCH_TMP/n$n/r$r
			mkdir -p "$d"
			settle
			bench_log "N=$n, round $r of $peer_rounds: minica, ECDSA P-256"
			new_minica "$d/minica-ec" ecdsa-p256
			bench_measure "minica-ec-$n-r$r" "minica ecdsa-p256" "$n" loop_minica "$d/minica-ec" "$n" c
			bench_log "N=$n, round $r of $peer_rounds: openssl req + ca, ECDSA P-256"
			new_openssl "$d/openssl-ec" "${ec[@]}"
			bench_measure "openssl-ec-$n-r$r" "openssl req+ca ecdsa-p256" "$n" loop_openssl "$d/openssl-ec" "$n" c "${ec[@]}"
			bench_log "N=$n, round $r of $peer_rounds: minica, RSA-2048"
			new_minica "$d/minica-rsa" rsa-2048
			bench_measure "minica-rsa-$n-r$r" "minica rsa-2048" "$n" loop_minica "$d/minica-rsa" "$n" c --key-type rsa-2048
			bench_log "N=$n, round $r of $peer_rounds: openssl req + ca, RSA-2048"
			new_openssl "$d/openssl-rsa" "${rsa[@]}"
			bench_measure "openssl-rsa-$n-r$r" "openssl req+ca rsa-2048" "$n" loop_openssl "$d/openssl-rsa" "$n" c "${rsa[@]}"
			if [ "$n" -le "$easyrsa_max" ]; then
				bench_log "N=$n, round $r of $peer_rounds: easy-rsa, EC P-256"
				new_easyrsa "$d/easyrsa"
				bench_measure "easyrsa-$n-r$r" "easy-rsa ec p-256" "$n" loop_easyrsa "$d/easyrsa" "$n" c
				easyrsa_ran=$n
			fi
		done
		[ "$n" -le "$easyrsa_max" ] || bench_log "N=$n: easy-rsa skipped (BENCH_EASYRSA_MAX=$easyrsa_max)"
	done
	[ "$easyrsa_ran" -gt 0 ] || bench_die "easy-rsa ran at no N (BENCH_EASYRSA_MAX=$easyrsa_max)"
}

# median prints the median of the numbers on stdin, one a line.
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# peer_ratio A B [FIELD] prints how many times faster tool A is than B per
# certificate (wall or cpu time): the ratio within each round, where the
# two ran close together, then the median over the rounds.
peer_ratio() {
	awk -F '\t' -v a="$1" -v b="$2" -v f="${3:-wall}" '
		function per_cert() { return ((f == "cpu") ? $5 : $4) / $3 }
		match($1, /-r[0-9]+$/) {
			key = substr($1, 1, RSTART - 1); r = substr($1, RSTART + 2)
			if (key == a) ta[r] = per_cert()
			if (key == b) tb[r] = per_cert()
		}
		END { for (r in ta) if (r in tb) print tb[r] / ta[r] }' "$BENCH_TMP/results.tsv" |
		median | awk '{ printf "%.2f", $1 }'
}

# report_peers prints the table, the ratios and the verdicts of part 1.
report_peers() {
	local n en r_ec r_rsa r_er c_ec c_rsa c_er peak_kb
	echo
	echo "-- one process (openssl: a req + ca pair) per certificate; CPU is user+sys of the whole loop;"
	echo "-- peak RSS is the largest single process of the loop"
	bench_table '^(minica|openssl|easyrsa)-'
	for n in $counts; do
		[ "$n" -le "$easyrsa_max" ] ||
			echo "easy-rsa was not run at N=$n (BENCH_EASYRSA_MAX=$easyrsa_max): ratios at N=$n use its N=$easyrsa_ran figure"
	done
	echo
	echo "-- how many times faster minica is per certificate, in wall time (the targets) and in CPU time:"
	echo "-- the ratio within each round, then the median over $peer_rounds rounds"
	for n in $counts; do
		en=$n
		[ "$n" -le "$easyrsa_max" ] || en=$easyrsa_ran
		r_ec=$(peer_ratio "minica-ec-$n" "openssl-ec-$n")
		r_rsa=$(peer_ratio "minica-rsa-$n" "openssl-rsa-$n")
		r_er=$(peer_ratio "minica-ec-$n" "easyrsa-$en")
		c_ec=$(peer_ratio "minica-ec-$n" "openssl-ec-$n" cpu)
		c_rsa=$(peer_ratio "minica-rsa-$n" "openssl-rsa-$n" cpu)
		c_er=$(peer_ratio "minica-ec-$n" "easyrsa-$en" cpu)
		printf 'N=%-5d minica vs openssl ECDSA   %6.2fx  (target >= 3x:   %-6s)  CPU %6.2fx\n' "$n" "$r_ec" "$(bench_verdict "$r_ec" '>=' 3)" "$c_ec"
		printf 'N=%-5d minica vs openssl RSA     %6.2fx  (target >= 2.5x: %-6s)  CPU %6.2fx\n' "$n" "$r_rsa" "$(bench_verdict "$r_rsa" '>=' 2.5)" "$c_rsa"
		printf 'N=%-5d minica vs easy-rsa        %6.2fx  (target >= 25x:  %-6s)  CPU %6.2fx\n' "$n" "$r_er" "$(bench_verdict "$r_er" '>=' 25)" "$c_er"
	done
	peak_kb=$(awk -F '\t' '$1 ~ /^(minica|grow)-/ && $6 > m { m = $6 } END { print m + 0 }' "$BENCH_TMP/results.tsv")
	printf 'minica peak RSS                %6.1f MiB (target <= 16 MiB: %s)\n' \
		"$(awk -v k="$peak_kb" 'BEGIN { print k / 1024 }')" "$(bench_verdict "$peak_kb" '<=' 16384)"
}

# --- part 2: issuance against a large database, and list over it -------------

# run_database times issuance into an empty CA and into one holding $records
# records, alternating which goes first, then times minica list over the
# large one.
run_database() {
	local r empty=$BENCH_TMP/empty full=$BENCH_TMP/full start
	bench_log "creating a CA with $records records"
	new_minica "$empty" ecdsa-p256
	new_minica "$full" ecdsa-p256
	start=$(bench_now_ns)
	"$BENCH_TMP/fill" -dir "$full" -n "$records" -revoked 0 >/dev/null
	sync # so that issuance does not pay for writing back the fill
	fill_s=$(awk -v s="$start" -v e="$(bench_now_ns)" 'BEGIN { printf "%.1f", (e - s) / 1e9 }')
	settle # the peers' loops may have freed thousands of inodes
	for ((r = 1; r <= rounds; r++)); do
		bench_log "database size, round $r of $rounds: $growth_n certificates into each CA"
		if ((r % 2)); then
			bench_measure "grow-empty-$r" "minica, empty database" "$growth_n" loop_minica "$empty" "$growth_n" "r$r-"
			bench_measure "grow-full-$r" "minica, $records records" "$growth_n" loop_minica "$full" "$growth_n" "r$r-"
		else
			bench_measure "grow-full-$r" "minica, $records records" "$growth_n" loop_minica "$full" "$growth_n" "r$r-"
			bench_measure "grow-empty-$r" "minica, empty database" "$growth_n" loop_minica "$empty" "$growth_n" "r$r-"
		fi
	done

	bench_log "listing $records records"
	start=$(bench_now_ns)
	list_lines=$(/usr/bin/time -f '%U %S %M' -o "$BENCH_TMP/time.out" "$MINICA" --dir "$full" list | wc -l)
	list_wall=$(awk -v s="$start" -v e="$(bench_now_ns)" 'BEGIN { printf "%.2f", (e - s) / 1e9 }')
	read -r list_user list_sys list_rss <"$BENCH_TMP/time.out"
	[ "$list_lines" -eq $((records + rounds * growth_n)) ] ||
		bench_die "minica list printed $list_lines lines; want $((records + rounds * growth_n))"
	# The reader stamps the time as soon as the first line arrives; minica
	# then dies of SIGPIPE.
	start=$(bench_now_ns)
	list_first_ms=$(
		set +o pipefail
		"$MINICA" --dir "$full" list 2>/dev/null | { IFS= read -r _ && bench_now_ns; } |
			awk -v s="$start" '{ printf "%.1f", ($1 - s) / 1e6 }'
	)
}

# per_cert KIND FIELD prints each round's per-certificate time in ms.
per_cert() {
	local r
	for ((r = 1; r <= rounds; r++)); do
		awk -v t="$(bench_get "grow-$1-$r" "$2")" -v n="$growth_n" 'BEGIN { printf "%.3f\n", 1000 * t / n }'
	done
}

# report_database prints the results and verdict of part 2.
report_database() {
	local empty_ms full_ms growth empty_cpu full_cpu
	empty_ms=$(per_cert empty wall | median)
	full_ms=$(per_cert full wall | median)
	empty_cpu=$(per_cert empty cpu | median)
	full_cpu=$(per_cert full cpu | median)
	growth=$(awk -v a="$empty_ms" -v b="$full_ms" 'BEGIN { printf "%+.1f", 100 * (b - a) / a }')
	echo
	echo "-- database size: $rounds rounds of $growth_n certificates into each CA, alternating which goes first;"
	echo "-- filling $records records took ${fill_s}s including sync"
	bench_table '^grow-'
	printf 'median per certificate, %d records vs empty: %s ms vs %s ms = %s%% (target within 10%%: %s); CPU %s ms vs %s ms\n' \
		"$records" "$full_ms" "$empty_ms" "$growth" \
		"$(bench_verdict "$(awk -v g="$growth" 'BEGIN { print (g < 0 ? -g : g) }')" '<=' 10)" "$full_cpu" "$empty_cpu"
	awk -v w="$list_wall" -v f="$list_first_ms" -v n="$list_lines" -v u="$list_user" -v y="$list_sys" -v m="$list_rss" 'BEGIN {
		printf "minica list, %d lines: %.2f s total (%.0f lines/s), CPU %.2f s, peak RSS %.1f MiB; first line after %.1f ms\n",
			n, w, n / w, u + y, m / 1024, f
	}'
}

# --- part 3: batch issuance ----------------------------------------------------

# batch_file FILE N PREFIX writes a --from file of N client rows.
batch_file() {
	awk -v n="$2" -v p="$3" 'BEGIN { print "name,email"; for (i = 1; i <= n; i++) printf "%s%d,%s%d@example.com\n", p, i, p, i }' >"$1"
}

# run_floor KEY LABEL SUB N runs ca's BenchmarkBatchFloor/SUB over N
# certificates and records its in-process time (the benchmark's ns/cert;
# set-up untimed) with the CPU and peak RSS of the whole test binary. Its
# files stay until the script exits (MINICA_BENCH_KEEP): removed at once,
# they slowed the next round's minica, which runs first (see settle).
run_floor() {
	local key=$1 label=$2 sub=$3 n=$4 out ns user sys rss
	sync
	out=$(cd "$BENCH_TMP" && TMPDIR=$BENCH_TMP MINICA_BENCH_BATCH_N=$n MINICA_BENCH_KEEP=1 /usr/bin/time -f '%U %S %M' -o "$BENCH_TMP/time.out" \
		"$BENCH_TMP/ca.test" -test.run '^$' -test.bench "^BenchmarkBatchFloor/$sub\$" -test.benchtime 1x) ||
		bench_die "$label failed: $out"
	ns=$(awk '$NF == "ns/cert" { print $(NF - 1) }' <<<"$out")
	[ -n "$ns" ] || bench_die "$label: no ns/cert in: $out"
	read -r user sys rss <"$BENCH_TMP/time.out"
	awk -v k="$key" -v l="$label" -v n="$n" -v ns="$ns" -v u="$user" -v y="$sys" -v r="$rss" \
		'BEGIN { printf "%s\t%s\t%d\t%.4f\t%.2f\t%d\n", k, l, n, ns * n / 1e9, u + y, r }' >>"$BENCH_TMP/results.tsv"
}

# run_batch times, $peer_rounds times, the batch of $batch_n certificates
# by every tool, each in a fresh CA, then the --p12 batch of $p12_n.
run_batch() {
	local r d en=$batch_n
	[ "$en" -le "$easyrsa_max" ] || en=$easyrsa_max
	batch_ran_easyrsa=$en
	for ((r = 1; r <= peer_rounds; r++)); do
		d=$BENCH_TMP/batch/r$r
		mkdir -p "$d"
		batch_file "$d/rows.csv" "$batch_n" c
		settle
		bench_log "batch of $batch_n, round $r of $peer_rounds: minica issue client --from"
		new_minica "$d/minica" ecdsa-p256
		bench_measure "batch-minica-r$r" "minica --from (1 process)" "$batch_n" batch_minica "$d/minica" "$d/rows.csv"
		bench_log "batch of $batch_n, round $r of $peer_rounds: openssl req + ca loop"
		new_openssl "$d/openssl-loop" "${ec[@]}"
		bench_measure "batch-openssl-loop-r$r" "openssl req+ca loop" "$batch_n" loop_openssl "$d/openssl-loop" "$batch_n" c "${ec[@]}"
		bench_log "batch of $batch_n, round $r of $peer_rounds: openssl req loop + one openssl ca -infiles"
		new_openssl "$d/openssl-infiles" "${ec[@]}"
		bench_measure "batch-openssl-infiles-r$r" "openssl req + ca -infiles" "$batch_n" infiles_openssl "$d/openssl-infiles" "$batch_n" c "${ec[@]}"
		bench_log "batch, round $r of $peer_rounds: easy-rsa, $en certificates"
		new_easyrsa "$d/easyrsa"
		bench_measure "batch-easyrsa-r$r" "easy-rsa ec p-256" "$en" loop_easyrsa "$d/easyrsa" "$en" c
		bench_log "batch of $batch_n, round $r of $peer_rounds: the Go floors"
		run_floor "batch-floor-engine-r$r" "Go floor, no fsync" engine "$batch_n"
		run_floor "batch-floor-bare-r$r" "Go floor, bare" bare "$batch_n"
	done
	settle
	bench_log "batch of $p12_n with --p12"
	d=$BENCH_TMP/batch/p12
	mkdir -p "$d/bundles"
	batch_file "$d/rows.csv" "$p12_n" p
	new_minica "$d/minica" ecdsa-p256
	bench_measure "batch-p12" "minica --from --p12" "$p12_n" batch_minica "$d/minica" "$d/rows.csv" \
		--p12 --p12-dir "$d/bundles" --p12-password-out "$d/passwords.csv"
	[ "$(find "$d/bundles" -name '*.p12' | wc -l)" -eq "$p12_n" ] || bench_die "the --p12 batch wrote $(find "$d/bundles" -name '*.p12' | wc -l) bundles; want $p12_n"
	[ "$(wc -l <"$d/passwords.csv")" -eq $((p12_n + 1)) ] || bench_die "the password file has $(wc -l <"$d/passwords.csv") lines; want $((p12_n + 1))"
}

# report_batch prints the table, ratios and verdicts of part 3.
report_batch() {
	local loop infiles er floor bare c_loop c_infiles rss_kb
	echo
	echo "-- batch: $batch_n ECDSA P-256 client certificates ($peer_rounds rounds; easy-rsa $batch_ran_easyrsa, per certificate);"
	echo "-- minica is one process with fsync (group commit); the Go floors are in-process times without fsync"
	bench_table '^batch-'
	loop=$(peer_ratio batch-minica batch-openssl-loop)
	infiles=$(peer_ratio batch-minica batch-openssl-infiles)
	er=$(peer_ratio batch-minica batch-easyrsa)
	floor=$(peer_ratio batch-minica batch-floor-engine)
	bare=$(peer_ratio batch-minica batch-floor-bare)
	c_loop=$(peer_ratio batch-minica batch-openssl-loop cpu)
	c_infiles=$(peer_ratio batch-minica batch-openssl-infiles cpu)
	echo
	echo "-- how many times faster minica --from is per certificate (wall; the ratio within each round, median over rounds)"
	printf 'minica --from vs openssl req+ca loop     %7.2fx  (target >= 10x: %-6s)  CPU %6.2fx\n' "$loop" "$(bench_verdict "$loop" '>=' 10)" "$c_loop"
	printf 'minica --from vs openssl ca -infiles     %7.2fx  (target >= 2x:  %-6s)  CPU %6.2fx\n' "$infiles" "$(bench_verdict "$infiles" '>=' 2)" "$c_infiles"
	printf 'minica --from vs easy-rsa                %7.2fx\n' "$er"
	printf 'minica --from vs Go floor (same files)   %7.2fx  (target >= 0.5x, within 2x: %s)\n' "$floor" "$(bench_verdict "$floor" '>=' 0.5)"
	printf 'minica --from vs Go floor (bare)         %7.2fx\n' "$bare"
	rss_kb=$(bench_get batch-p12 rss)
	printf '%d certificates with --p12: %.1f s, peak RSS %.1f MiB (target <= 64 MiB: %s)\n' "$p12_n" "$(bench_get batch-p12 wall)" \
		"$(awk -v k="$rss_kb" 'BEGIN { print k / 1024 }')" "$(bench_verdict "$rss_kb" '<=' 65536)"
}

# --- run and report -----------------------------------------------------------

if has_part peers; then run_peers; fi
if has_part database; then run_database; fi
if has_part batch; then run_batch; fi

echo
echo "== minica issuance benchmark =="
bench_machine
echo "load:    $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end (1, 5, 15 min averages)"
echo "command: BENCH_PARTS=\"$parts\" BENCH_RECORDS=$records BENCH_GROWTH_N=$growth_n BENCH_ROUNDS=$rounds BENCH_PEER_ROUNDS=$peer_rounds BENCH_EASYRSA_MAX=$easyrsa_max BENCH_SETTLE=$settle_s BENCH_BATCH_N=$batch_n BENCH_P12_N=$p12_n scripts/bench/issue.sh \"$counts\""
if has_part peers; then report_peers; fi
if has_part database; then report_database; fi
if has_part batch; then report_batch; fi
