#!/usr/bin/env bash
# CA key custody and hierarchy benchmark, in one run: a CA whose key is in
# a SoftHSM2 token against a CA whose key is a file (issuance, one process
# per certificate, and CRL signing), and issuance under an intermediate
# against issuance under a single-level CA (target: within 10%).
#
#	scripts/bench/hsm.sh              N=200 certificates and M=50 CRLs a loop, 3 rounds
#	BENCH_QUICK=1 scripts/bench/hsm.sh  smoke run: N=20, M=10, 1 round
#	BENCH_N, BENCH_M, BENCH_ROUNDS      override those
#	BENCH_REVOKED                      revoked certificates in each CRL (default 100)
#
# Every CA is ECDSA P-256 and the leaves too. All loops use one minica
# binary built with cgo (a PKCS#11 build), so that the key is the only
# difference. Each round makes fresh CAs and runs the loops in turn; the
# ratios are taken within each round and the median over the rounds is
# reported. As root on Debian it installs softhsm2 and time when missing.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=scripts/bench/lib.sh
. "$here/lib.sh"

if [ "${BENCH_QUICK:-0}" = 1 ]; then
	: "${BENCH_N:=20}" "${BENCH_M:=10}" "${BENCH_ROUNDS:=1}" "${BENCH_REVOKED:=10}"
fi
n=${BENCH_N:-200}
m=${BENCH_M:-50}
rounds=${BENCH_ROUNDS:-3}
revoked=${BENCH_REVOKED:-100}
for v in "$n" "$m" "$rounds" "$revoked"; do
	[[ $v =~ ^[1-9][0-9]{0,6}$ ]] || bench_die "counts must be integers from 1 to 9999999, got \"$v\""
done

command -v go >/dev/null 2>&1 || bench_die "go is not on PATH (it builds minica)"
bench_require softhsm2-util:softhsm2 /usr/bin/time:time
module=
for f in /usr/lib/softhsm/libsofthsm2.so /usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so /usr/lib/aarch64-linux-gnu/softhsm/libsofthsm2.so; do
	[ -e "$f" ] && module=$f && break
done
[ -n "$module" ] || bench_die "no libsofthsm2.so: install the Debian package softhsm2"
bench_tmpdir
MINICA=$BENCH_TMP/minica
export MINICA
bench_log "building minica with cgo in $BENCH_TMP"
(cd "$repo" && CGO_ENABLED=1 go build -trimpath -tags urfave_cli_no_docs -o "$MINICA" ./cmd/minica)

# A token of the benchmark's own, as the tests make theirs.
export SOFTHSM2_CONF=$BENCH_TMP/softhsm2.conf
mkdir -p "$BENCH_TMP/tokens"
printf 'directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\n' "$BENCH_TMP/tokens" >"$SOFTHSM2_CONF"
softhsm2-util --init-token --free --label minica-bench --pin 1234 --so-pin 5678 >/dev/null
printf '1234\n' >"$BENCH_TMP/pin"

# loop_issue DIR N PREFIX ARGS... issues N client certificates, one
# process each.
loop_issue() {
	local dir=$1 count=$2 prefix=$3 i
	shift 3
	for ((i = 1; i <= count; i++)); do
		"$MINICA" --dir "$dir" issue client "$prefix$i" --email "$prefix$i@example.com" "$@" >/dev/null || return 1
	done
}
# loop_crl DIR M ARGS... publishes M CRLs, one process each.
loop_crl() {
	local dir=$1 count=$2 i
	shift 2
	for ((i = 1; i <= count; i++)); do
		"$MINICA" --dir "$dir" crl "$@" >/dev/null || return 1
	done
}
export -f loop_issue loop_crl

# new_cas R makes the round's CAs: a file-key CA, a token-key CA, a root
# with an intermediate (file keys), each with $revoked revoked leaves.
new_cas() {
	local d=$BENCH_TMP/r$1 ca
	mkdir -p "$d"
	"$MINICA" --dir "$d/file" init --cn "Bench File CA" --no-password >/dev/null
	"$MINICA" --dir "$d/token" init --cn "Bench Token CA" --pin-file "$BENCH_TMP/pin" \
		--key-uri "pkcs11:token=minica-bench;object=ca-r$1?module-path=$module" >/dev/null
	"$MINICA" --dir "$d/root" init --root --cn "Bench Root" --no-password >/dev/null
	"$MINICA" --dir "$d/int" init --intermediate --cn "Bench Issuing CA" --no-password --parent "$d/root" >/dev/null
	for ca in file token int; do
		loop_issue "$d/$ca" "$revoked" rv --pin-file "$BENCH_TMP/pin" 2>/dev/null || loop_issue "$d/$ca" "$revoked" rv
		for ((i = 1; i <= revoked; i++)); do
			"$MINICA" --dir "$d/$ca" revoke "rv$i" --no-crl --pin-file "$BENCH_TMP/pin" >/dev/null 2>&1 ||
				"$MINICA" --dir "$d/$ca" revoke "rv$i" --no-crl >/dev/null
		done
	done
}

for ((r = 1; r <= rounds; r++)); do
	d=$BENCH_TMP/r$r
	bench_log "round $r of $rounds: making the CAs ($revoked revoked leaves each)"
	new_cas "$r"
	# The order turns each round, so that no CA always runs first (after
	# the set-up's writes) or last.
	order=(file token int)
	for ((k = 0; k < 3; k++)); do
		ca=${order[(k + r) % 3]}
		bench_log "round $r: issuing $n certificates under the $ca CA"
		case $ca in
		file) bench_measure "issue-file-r$r" "issue, file key" "$n" loop_issue "$d/file" "$n" c ;;
		token) bench_measure "issue-token-r$r" "issue, SoftHSM2 key" "$n" loop_issue "$d/token" "$n" c --pin-file "$BENCH_TMP/pin" ;;
		int) bench_measure "issue-int-r$r" "issue, under intermediate" "$n" loop_issue "$d/int" "$n" c ;;
		esac
	done
	bench_log "round $r: signing $m CRLs with each key"
	if ((r % 2)); then
		bench_measure "crl-file-r$r" "crl, file key" "$m" loop_crl "$d/file" "$m"
		bench_measure "crl-token-r$r" "crl, SoftHSM2 key" "$m" loop_crl "$d/token" "$m" --pin-file "$BENCH_TMP/pin"
	else
		bench_measure "crl-token-r$r" "crl, SoftHSM2 key" "$m" loop_crl "$d/token" "$m" --pin-file "$BENCH_TMP/pin"
		bench_measure "crl-file-r$r" "crl, file key" "$m" loop_crl "$d/file" "$m"
	fi
done

# ratio A B [FIELD] prints B's wall (or cpu) time per operation over A's:
# the ratio within each round, then the median over the rounds.
ratio() {
	awk -F '\t' -v a="$1" -v b="$2" -v f="${3:-wall}" '
		match($1, /-r[0-9]+$/) {
			key = substr($1, 1, RSTART - 1); r = substr($1, RSTART + 2)
			t = ((f == "cpu") ? $5 : $4) / $3
			if (key == a) ta[r] = t
			if (key == b) tb[r] = t
		}
		END { for (r in ta) if (r in tb) print tb[r] / ta[r] }' "$BENCH_TMP/results.tsv" |
		sort -n | awk '{ v[NR] = $1 } END { printf "%.3f", v[int((NR + 1) / 2)] }'
}

echo
bench_machine
printf 'token:   SoftHSM2 %s (%s)\n' "$(dpkg-query -W -f '${Version}' softhsm2 2>/dev/null || echo unknown)" "$module"
echo
echo "-- one process per certificate or CRL (each CRL lists $revoked revoked certificates); ms/cert is ms per operation"
bench_table '^(issue|crl)-'
echo
tok_issue=$(ratio issue-file issue-token)
tok_crl=$(ratio crl-file crl-token)
int_issue=$(ratio issue-file issue-int)
echo "-- wall (and CPU) time per operation over the file-key single-level CA's, median over $rounds rounds"
printf 'issue under a SoftHSM2 key / under a file key:         %s (CPU %s)\n' "$tok_issue" "$(ratio issue-file issue-token cpu)"
printf 'crl signed by a SoftHSM2 key / by a file key:          %s (CPU %s)\n' "$tok_crl" "$(ratio crl-file crl-token cpu)"
printf 'issue under an intermediate / under a single-level CA: %s (CPU %s; target <= 1.10: %s)\n' "$int_issue" "$(ratio issue-file issue-int cpu)" "$(bench_verdict "$int_issue" "<=" 1.10)"
