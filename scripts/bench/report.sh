#!/usr/bin/env bash
# Measures `minica report` over databases of growing size, to show that it
# streams: its peak RSS stays flat from 10^4 to 10^6 records while its time
# grows with them. `minica list --json` over the same database, which also
# streams, is measured beside it. The records are written by
# scripts/bench/fill (valid client records, a tenth of them revoked in the
# last day, so that every section of the report has entries).
#
# Usage: scripts/bench/report.sh ["N1 N2 ..."]
#
#	BENCH_REPORT_N  record counts (default "10000 100000 1000000"; the argument wins)
#	BENCH_QUICK=1   smoke run: "1000 10000"
#
# It works in a temporary directory under TMPDIR (10^6 records take about
# 4 GiB and a million inodes), builds minica and fill there and removes
# everything on exit. Go must be on PATH; as root on Debian it installs
# time when it is missing.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=scripts/bench/lib.sh
. "$here/lib.sh"

if [ "${BENCH_QUICK:-0}" = 1 ]; then
	: "${BENCH_REPORT_N:=1000 10000}"
fi
counts=${1:-${BENCH_REPORT_N:-10000 100000 1000000}}
for v in $counts; do
	case $v in
	'' | *[!0-9]*) bench_die "counts must be positive integers, got \"$v\"" ;;
	esac
	[ "$v" -gt 0 ] || bench_die "counts must be positive integers, got \"$v\""
done

bench_require /usr/bin/time:time
bench_tmpdir
export MINICA="$BENCH_TMP/minica" BENCH_TMP
bench_log "building minica and fill"
(cd "$repo" && go build -o "$MINICA" ./cmd/minica && go build -o "$BENCH_TMP/fill" ./scripts/bench/fill)

report() { MINICA_DIR=$1 "$MINICA" report --json >"$BENCH_TMP/report.json"; }
list() { MINICA_DIR=$1 "$MINICA" list --json >/dev/null 2>&1; }
export -f report list

for n in $counts; do
	dir="$BENCH_TMP/ca-$n"
	"$MINICA" --dir "$dir" init --cn "Bench Report CA" --no-password >/dev/null
	bench_log "filling $n records"
	"$BENCH_TMP/fill" -dir "$dir" -n "$n" -revoked $((n / 10)) >&2
	bench_measure "report-$n" "report --json" "$n" report "$dir"
	grep -q "\"records\":$n," "$BENCH_TMP/report.json" || bench_die "report of $n records: $(head -c 300 "$BENCH_TMP/report.json")"
	bench_measure "list-$n" "list --json" "$n" list "$dir"
	rm -rf "$dir"
done

echo
bench_machine
echo
awk -F '\t' '
	BEGIN { printf "%-16s %9s %9s %12s %10s\n", "command", "records", "wall s", "us/record", "peak RSS" }
	{ printf "%-16s %9d %9.2f %12.2f %6.1f MiB\n", $2, $3, $4, 1e6 * $4 / $3, $6 / 1024 }' "$BENCH_TMP/results.tsv"
