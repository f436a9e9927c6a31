#!/usr/bin/env bash
# report.sh RESULTS.tsv ROUNDS.tsv TLS KEX CRL_ENTRIES: the Markdown table,
# ratios to nginx and target checks of a proxy.sh run, on stdout.
#
# The table holds each column's median over the rounds. The target checks
# use ratios taken within a round, between servers that ran one after the
# other (minica, then nginx, then minica-default; minica-100k and
# minica-1000 against that round's minica), and
# then the median of those ratios over the rounds: a slow spell of the
# machine moves both sides of a ratio, not just one column.
set -euo pipefail
awk -F'\t' -v tls="$3" -v kex="$4" -v entries="$5" '
FNR == 1 { file++; next }
file == 1 { rps[$1] = $2; p99[$1] = $3; req[$1] = $4; hps[$1] = $5; hp99[$1] = $6; hs[$1] = $7; order[++n] = $1; next }
{ key = $1 SUBSEP $2; rreq[key] = $5; rhs[key] = $8; rp99[key] = $4; if ($2 > rounds) rounds = $2 }
function r(a, b) { return b > 0 ? sprintf("%.2f", a / b) : "n/a" }
function verdict(ok) { return ok ? "**met**" : "**missed**" }
# per_round(A, B, M): the ratios A/B of metric M in each round, as "x, y, z",
# and their median in med.
function per_round(a, b, m,    i, k, v, list, t, j) {
	k = 0
	for (i = 1; i <= rounds; i++) {
		if (m == "req") v[++k] = rreq[a, i] / rreq[b, i]
		else if (m == "hs") v[++k] = rhs[a, i] / rhs[b, i]
		else v[++k] = rp99[a, i] / rp99[b, i]
	}
	list = ""
	for (i = 1; i <= k; i++) list = list (i > 1 ? ", " : "") sprintf("%.2f", v[i])
	for (i = 2; i <= k; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
	med = v[int((k + 1) / 2)]
	return list
}
END {
	printf "| proxy | keep-alive req/s | p99 ms | CPU us/req | handshakes/s | p99 ms | CPU us/handshake |\n"
	printf "|---|---:|---:|---:|---:|---:|---:|\n"
	for (i = 1; i <= n; i++) {
		s = order[i]
		printf "| %s | %d | %.2f | %.1f | %d | %d | %d |\n", s, rps[s], p99[s], req[s], hps[s], hp99[s], hs[s]
	}
	printf "\nTLS: %s, key exchange %s; 100k CRL: %d entries; minica-1000: a policy of 1,000 routes.\n\n", tls, kex, entries
	printf "| ratio to nginx (column medians) | req/s | p99 | CPU/req | handshakes/s | CPU/handshake |\n|---|---:|---:|---:|---:|---:|\n"
	for (i = 1; i <= n; i++) {
		s = order[i]
		printf "| %s | %s | %s | %s | %s | %s |\n", s, r(rps[s], rps["nginx"]), r(p99[s], p99["nginx"]), r(req[s], req["nginx"]), r(hps[s], hps["nginx"]), r(hs[s], hs["nginx"])
	}
	printf "\nTargets (median over the rounds of the ratio within each round; the rounds in brackets):\n"
	l = per_round("minica", "nginx", "hs")
	printf "- CPU per full handshake <= 0.6x nginx: %.2f x [%s], %s\n", med, l, verdict(med <= 0.6)
	l = per_round("minica", "nginx", "req")
	printf "- CPU per keep-alive request, the same two headers, <= 1.5x nginx: %.2f x [%s], %s\n", med, l, verdict(med <= 1.5)
	l = per_round("minica-default", "nginx", "req")
	printf "- CPU per keep-alive request, minica default profile, <= 1.7x nginx: %.2f x [%s], %s\n", med, l, verdict(med <= 1.7)
	l = per_round("minica", "nginx", "p99")
	printf "- keep-alive p99 <= 1.5x nginx: %.2f x [%s], %s\n", med, l, verdict(med <= 1.5)
	# The rate one core sustains is 1 / CPU per operation.
	l = per_round("minica-100k", "minica", "req"); cr = (med - 1) * 100; lr = l
	l = per_round("minica-100k", "minica", "hs"); ch = (med - 1) * 100
	printf "- 100k CRL costs < 5%% of either rate (CPU per request %+.1f%% [%s], per handshake %+.1f%% [%s]), %s\n", cr, lr, ch, l, verdict(cr < 5 && ch < 5)
	l = per_round("minica-1000", "minica", "req"); cr = (med - 1) * 100
	printf "- a policy of 1,000 routes costs < 5%% per request (CPU per request %+.1f%% [%s]), %s\n", cr, l, verdict(cr < 5)
}' "$1" "$2"
