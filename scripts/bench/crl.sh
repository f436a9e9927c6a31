#!/usr/bin/env bash
# CRL benchmark: minica against `openssl ca`, in the same run, on the same
# revocations.
#
#	scripts/bench/crl.sh [K...]        default K: 1000 100000 1000000
#	BENCH_QUICK=1 scripts/bench/crl.sh   smoke run: K = 200 2000, small revoke database
#
# openssl and GNU time are installed (Debian packages) when run as root and
# missing. For each K, a minica CA and an openssl CA (both ECDSA P-256) get the same K
# revoked serials (scripts/bench/fill writes minica's records and log
# and openssl's index.txt), then `minica crl` and `openssl ca -gencrl` take
# turns. With the largest K, a real client certificate issued by each CA is
# checked against its K-entry CRL: `minica verify` against `openssl verify
# -crl_check`. Then `minica revoke` of one certificate, CRL included, in a
# database of BENCH_REVOKE_RECORDS records (default 1000000, a tenth of them
# revoked; 0 skips it), and in the largest-K database against `openssl ca -revoke` plus
# `-gencrl` on its index.
#
# Wall time is the median of the repetitions (BENCH_REPS, default 5 for
# K < 100000, 3 below 1000000, 2 above); peak RSS is the largest of them, as
# /usr/bin/time reports it. Every step is bounded by the K list.
set -euo pipefail
cd "$(dirname "$0")/../.."

# shellcheck source=scripts/bench/lib.sh
. scripts/bench/lib.sh

if [ -n "${BENCH_QUICK:-}" ]; then
	default_k="200 2000"
	: "${BENCH_REVOKE_RECORDS:=5000}"
else
	default_k="1000 100000 1000000"
	: "${BENCH_REVOKE_RECORDS:=1000000}"
fi
if [ $# -gt 0 ]; then ks=("$@"); else read -r -a ks <<<"${BENCH_K:-$default_k}"; fi
for k in "${ks[@]}"; do
	[[ $k =~ ^[1-9][0-9]{0,7}$ ]] || bench_die "K must be between 1 and 99999999, not \"$k\""
done
[[ $BENCH_REVOKE_RECORDS =~ ^(0|[1-9][0-9]{0,7})$ ]] || bench_die "BENCH_REVOKE_RECORDS must be between 0 and 99999999, not \"$BENCH_REVOKE_RECORDS\""
largest=$(printf '%s\n' "${ks[@]}" | sort -n | tail -1)

bench_require openssl:openssl /usr/bin/time:time
command -v go >/dev/null 2>&1 || bench_die "go is needed to build minica (see go.mod for the version)"
bench_tmpdir
TMP=$BENCH_TMP
RESULTS=$TMP/results.tsv
go build -o "$TMP/minica" ./cmd/minica
go build -o "$TMP/fill" ./scripts/bench/fill
minica() { "$TMP/minica" "$@"; }

reps_for() {
	if [ -n "${BENCH_REPS:-}" ]; then echo "$BENCH_REPS"; elif [ "$1" -lt 100000 ]; then echo 5; elif [ "$1" -lt 1000000 ]; then echo 3; else echo 2; fi
}

# measure KEY CMD... runs CMD once under /usr/bin/time and appends KEY, wall
# seconds (from the clock, finer than time's 10 ms) and peak RSS in KiB.
measure() {
	local key=$1 start end rss
	shift
	sync
	start=$(date +%s%N)
	/usr/bin/time -f '%e %M' -o "$TMP/time.out" "$@" >"$TMP/out" 2>&1 || {
		cat "$TMP/out" >&2
		bench_die "$key: $* failed"
	}
	end=$(date +%s%N)
	rss=$(awk '{ print $2 }' "$TMP/time.out")
	printf '%s\t%.4f\t%d\n' "$key" "$(awk -v s="$start" -v e="$end" 'BEGIN { print (e - s) / 1e9 }')" "$rss" | tee -a "$RESULTS" >&2
}

# figure KEY FIELD prints the median wall time (wall) or largest peak RSS in
# KiB (rss) of KEY's runs.
figure() {
	awk -F '\t' -v k="$1" -v f="$2" '
		$1 == k { n++; w[n] = $2; if ($3 > r) r = $3 }
		END {
			if (!n) exit 1
			if (f == "rss") { print r; exit }
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (w[j] < w[i]) { t = w[i]; w[i] = w[j]; w[j] = t }
			print (n % 2) ? w[(n + 1) / 2] : (w[n / 2] + w[n / 2 + 1]) / 2
		}' "$RESULTS"
}

# new_minica DIR RECORDS REVOKED [INDEX] makes a minica CA with RECORDS
# synthetic records, REVOKED of them revoked, and publishes its CRL.
new_minica() {
	minica --dir "$1" init --cn 'Bench Root' --no-password >/dev/null
	"$TMP/fill" -dir "$1" -n "$2" -revoked "$3" ${4:+-index "$4"} >&2
	minica --dir "$1" crl >/dev/null
}

# new_openssl DIR makes an openssl CA with a P-256 key, an empty index and a
# configuration for `openssl ca`.
new_openssl() {
	local d=$1
	mkdir -p "$d/newcerts"
	cat >"$d/openssl.cnf" <<-EOF
		[ca]
		default_ca = bench
		[bench]
		dir = $d
		database = \$dir/index.txt
		new_certs_dir = \$dir/newcerts
		certificate = \$dir/ca.crt
		private_key = \$dir/ca.key
		serial = \$dir/serial
		crlnumber = \$dir/crlnumber
		default_md = sha256
		default_days = 365
		default_crl_days = 7
		unique_subject = no
		policy = anything
		crl_extensions = crl_ext
		[anything]
		commonName = supplied
		[crl_ext]
		authorityKeyIdentifier = keyid:always
		[req]
		distinguished_name = dn
		[dn]
		[ca_ext]
		basicConstraints = critical, CA:TRUE
		keyUsage = critical, keyCertSign, cRLSign
		subjectKeyIdentifier = hash
		[client_ext]
		basicConstraints = CA:FALSE
		keyUsage = critical, digitalSignature
		extendedKeyUsage = clientAuth
		authorityKeyIdentifier = keyid
	EOF
	openssl ecparam -name prime256v1 -genkey -noout -out "$d/ca.key" 2>/dev/null
	openssl req -new -x509 -config "$d/openssl.cnf" -key "$d/ca.key" -subj '/CN=Bench Root' \
		-days 3650 -extensions ca_ext -out "$d/ca.crt" 2>/dev/null
	: >>"$d/index.txt"
	echo 01 >"$d/crlnumber"
	echo 1000 >"$d/serial"
}

# openssl_leaf DIR NAME issues a client certificate NAME.crt in DIR.
openssl_leaf() {
	local d=$1
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$d/$2.key" \
		-subj "/CN=$2" -out "$d/$2.csr" 2>/dev/null
	openssl x509 -req -in "$d/$2.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -set_serial "0x$(openssl rand -hex 16)" \
		-days 365 -extfile "$d/openssl.cnf" -extensions client_ext -out "$d/$2.crt" 2>/dev/null
}

# crl_entries FILE counts the entries of a PEM CRL.
crl_entries() { openssl crl -in "$1" -noout -text | grep -c 'Serial Number:' || true; }

bench_log "building; K = ${ks[*]}; revoke database ${BENCH_REVOKE_RECORDS} records"
for k in "${ks[@]}"; do
	m=$TMP/minica-$k o=$TMP/openssl-$k
	bench_log "K=$k: set-up"
	new_openssl "$o"
	rm "$o/index.txt"
	new_minica "$m" "$k" "$k" "$o/index.txt"
	reps=$(reps_for "$k")
	for ((r = 1; r <= reps; r++)); do
		bench_log "K=$k: round $r of $reps"
		measure "crl-minica-$k" "$TMP/minica" --dir "$m" crl
		measure "crl-openssl-$k" openssl ca -config "$o/openssl.cnf" -gencrl -out "$o/crl.pem"
	done
	got_m=$(crl_entries "$m/crl.pem") got_o=$(crl_entries "$o/crl.pem")
	[ "$got_m" -eq "$k" ] && [ "$got_o" -eq "$k" ] || bench_die "K=$k: minica's CRL lists $got_m, openssl's $got_o"
	openssl crl -in "$m/crl.pem" -CAfile "$m/ca.crt" -noout 2>/dev/null || bench_die "K=$k: openssl refuses minica's CRL"
	printf '%s\t%s\n' "crl-bytes-$k" "$(stat -c %s "$m/crl.der")" >>"$TMP/sizes.tsv"
done

# Verification and revocation against the largest CRL.
m=$TMP/minica-$largest o=$TMP/openssl-$largest
bench_log "K=$largest: verify"
minica --dir "$m" issue client alice >/dev/null
alice=$(printf '%s\n' "$m"/certs/alice/*.crt)
openssl_leaf "$o" alice
for ((r = 1; r <= 5; r++)); do
	measure "verify-minica" "$TMP/minica" --dir "$m" verify "$alice"
	measure "verify-openssl" openssl verify -crl_check -CAfile "$o/ca.crt" -CRLfile "$o/crl.pem" "$o/alice.crt"
done
bench_log "K=$largest: revoke"
measure "revoke-all-minica" "$TMP/minica" --dir "$m" revoke alice --reason keyCompromise
measure "revoke-all-openssl" openssl ca -config "$o/openssl.cnf" -revoke "$o/alice.crt" -crl_reason keyCompromise
measure "revoke-all-openssl-gencrl" openssl ca -config "$o/openssl.cnf" -gencrl -out "$o/crl.pem"


n=$BENCH_REVOKE_RECORDS
if [ "$n" -gt 0 ]; then
	bench_log "revoke in a database of $n records, $((n / 10)) revoked: set-up"
	m=$TMP/minica-revoke
	new_minica "$m" "$n" "$((n / 10))"
	for ((r = 1; r <= 3; r++)); do
		minica --dir "$m" issue client "bob$r" >/dev/null
		measure "revoke-minica" "$TMP/minica" --dir "$m" revoke "bob$r" --reason keyCompromise
	done
fi

# The report.
model=$(awk -F ': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
printf '\nmachine: %s x %s, %s, %s; %s; %s\n' "$(nproc)" "${model:-unknown}" "$(uname -sr)" \
	"$(date -u '+%Y-%m-%d %H:%M UTC')" "$(go version | cut -d' ' -f3)" "$(openssl version | cut -d' ' -f1-2)"
row() { # LABEL KEY [PEERKEY]: time, peak RSS, and the peer's over ours
	local w r
	w=$(figure "$2" wall) r=$(figure "$2" rss)
	if [ -n "${3:-}" ]; then
		awk -v l="$1" -v w="$w" -v r="$r" -v pw="$(figure "$3" wall)" -v pr="$(figure "$3" rss)" \
			'BEGIN { printf "%-44s %10.1f ms %8.1f MiB   %6.2fx faster, %5.2fx less memory\n", l, 1000 * w, r / 1024, pw / w, pr / r }'
	else
		awk -v l="$1" -v w="$w" -v r="$r" 'BEGIN { printf "%-44s %10.1f ms %8.1f MiB\n", l, 1000 * w, r / 1024 }'
	fi
}
printf '\n%-44s %13s %12s   %s\n' "what" "median wall" "peak RSS" "minica against openssl"
for k in "${ks[@]}"; do
	bytes=$(awk -F '\t' -v k="crl-bytes-$k" '$1 == k { print $2 }' "$TMP/sizes.tsv")
	row "minica crl, K=$k ($((bytes / 1024)) KiB DER)" "crl-minica-$k" "crl-openssl-$k"
	row "openssl ca -gencrl, K=$k" "crl-openssl-$k"
done
row "minica verify, $largest-entry CRL" verify-minica verify-openssl
row "openssl verify -crl_check, $largest-entry CRL" verify-openssl
row "minica revoke + CRL, $largest records all revoked" revoke-all-minica
row "openssl ca -revoke, $largest-line index" revoke-all-openssl
row "openssl ca -gencrl after it" revoke-all-openssl-gencrl
[ "$n" -eq 0 ] || row "minica revoke + CRL, $n records, $((n / 10)) revoked" revoke-minica
