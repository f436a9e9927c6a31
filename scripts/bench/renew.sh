#!/usr/bin/env bash
# Benchmarks `minica renew --expiring` against batch issuance in the same
# run: it issues N client certificates with `issue client --from` (the
# batch the renewal is compared with), then renews all of them with
# `renew --expiring 30d --json`, and reports the cost per certificate of
# each, their ratio, and how long after its start the renewal printed its
# first successor (it streams: successors are reported group by group,
# not after the whole batch).
#
# Usage: scripts/bench/renew.sh [N]
#
#	BENCH_RENEW_N       certificates (default 100000; the argument wins)
#	BENCH_RENEW_ROUNDS  rounds (default 1), each in a fresh CA: issue, then
#	                    renew; the ratio is taken within each round and the
#	                    medians over the rounds are reported (3 GB of disk
#	                    a round at N = 100000)
#	BENCH_QUICK=1       smoke run: N=500
#
# It works in a temporary directory under TMPDIR, builds minica there and
# removes everything on exit. Go must be on PATH; as root on Debian it
# installs time when it is missing.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=scripts/bench/lib.sh
. "$here/lib.sh"

if [ "${BENCH_QUICK:-0}" = 1 ]; then
	: "${BENCH_RENEW_N:=500}"
fi
n=${1:-${BENCH_RENEW_N:-100000}}
case $n in
'' | *[!0-9]*) bench_die "N must be a positive integer, got \"$n\"" ;;
esac
[ "$n" -gt 0 ] || bench_die "N must be a positive integer, got \"$n\""
rounds=${BENCH_RENEW_ROUNDS:-1}
case $rounds in
'' | *[!0-9]* | 0) bench_die "BENCH_RENEW_ROUNDS must be a positive integer, got \"$rounds\"" ;;
esac

bench_require /usr/bin/time:time
bench_tmpdir
export MINICA="$BENCH_TMP/minica" BENCH_TMP
bench_log "building minica"
(cd "$repo" && go build -o "$MINICA" ./cmd/minica)

bench_log "writing $n rows"
awk -v n="$n" 'BEGIN { for (i = 1; i <= n; i++) printf "{\"name\":\"r%d\",\"email\":\"r%d@example.com\",\"validity\":\"10d\"}\n", i, i }' \
	>"$BENCH_TMP/rows.jsonl"

issue_batch() { "$MINICA" issue client --from "$BENCH_TMP/rows.jsonl" --json >"$BENCH_TMP/issued.jsonl"; }

# renew_expiring notes when its first JSON line arrived, in ns since the
# epoch, in first.ns, and when it started in start.ns.
renew_expiring() {
	date +%s%N >"$BENCH_TMP/start.ns"
	"$MINICA" renew --expiring 30d --json | {
		IFS= read -r line
		date +%s%N >"$BENCH_TMP/first.ns"
		printf '%s\n' "$line"
		cat
	} >"$BENCH_TMP/renewed.jsonl"
}
export -f issue_batch renew_expiring

# median prints the median of its arguments.
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

ratios=() cpu_ratios=() firsts=()
for ((r = 1; r <= rounds; r++)); do
	# A new directory per round, the earlier ones kept until the end:
	# deleting 10^6 files would make the next round's inode allocations
	# skip them (ext4 without a journal, see "Where the time goes").
	export MINICA_DIR="$BENCH_TMP/ca$r"
	"$MINICA" init --cn 'Bench Renew CA' --no-password >/dev/null
	bench_log "round $r of $rounds: issue client --from: $n certificates (load $(cut -d' ' -f1 /proc/loadavg))"
	bench_measure "issue$r" "issue client --from #$r" "$n" issue_batch
	bench_log "round $r of $rounds: renew --expiring 30d: $n certificates (load $(cut -d' ' -f1 /proc/loadavg))"
	bench_measure "renew$r" "renew --expiring #$r" "$n" renew_expiring
	got=$(wc -l <"$BENCH_TMP/renewed.jsonl")
	[ "$got" -eq "$n" ] || bench_die "renew --expiring printed $got lines, want $n"
	firsts+=("$(awk -v s="$(cat "$BENCH_TMP/start.ns")" -v f="$(cat "$BENCH_TMP/first.ns")" 'BEGIN { printf "%.0f", (f - s) / 1e6 }')")
	ratios+=("$(awk -v i="$(bench_get "issue$r" wall)" -v r="$(bench_get "renew$r" wall)" 'BEGIN { printf "%.2f", r / i }')")
	cpu_ratios+=("$(awk -v i="$(bench_get "issue$r" cpu)" -v r="$(bench_get "renew$r" cpu)" 'BEGIN { printf "%.2f", r / i }')")
done

echo
bench_machine
echo
bench_table '^(issue|renew)[0-9]+$'
echo
printf 'per round: renew/issue wall %s; CPU %s; first successor after %s ms\n' "${ratios[*]}" "${cpu_ratios[*]}" "${firsts[*]}"
ratio=$(printf %.2f "$(median "${ratios[@]}")")
first_ms=$(printf %.0f "$(median "${firsts[@]}")")
printf 'renew --expiring / issue --from, wall per certificate: %s (median of %d; CPU %s; target <= 1.20: %s)\n' "$ratio" "$rounds" "$(printf %.2f "$(median "${cpu_ratios[@]}")")" "$(bench_verdict "$ratio" "<=" 1.20)"
printf 'first successor reported after: %s ms (median of %d; target <= 1000: %s)\n' "$first_ms" "$rounds" "$(bench_verdict "$first_ms" "<=" 1000)"
