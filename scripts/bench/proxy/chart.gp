# chart.gp: the proxy benchmark at a glance, from proxy.sh's results.tsv.
#   gnuplot -e "results='results.tsv'; out='perf-proxy.svg'" chart.gp
# Three panels, one bar per proxy, lower is better in each; the dashed line
# is minica's target, drawn from nginx's figure (row 2 of results.tsv).
set terminal svg size 1200,400 dynamic font "sans,12" background rgb "white"
set output out
set datafile separator "\t"
set style fill solid 0.85 border -1
set boxwidth 0.6
set grid ytics lc rgb "#dddddd"
set xtics nomirror scale 0 font ",11"
set ytics nomirror
set border 3
unset key
set bmargin 4
# lbl(name): the server's name on two lines at its first '-' (minica-100k).
lbl(s) = strstrt(s, "-") ? s[1:strstrt(s, "-") - 1] . "\n" . s[strstrt(s, "-") + 1:] : s
set offsets 0, 0, graph 0.15, 0
stats results every ::2::2 using 7 nooutput
hs_target = 0.6 * STATS_max
stats results every ::2::2 using 4 nooutput
req_target = 1.5 * STATS_max
stats results every ::2::2 using 3 nooutput
p99_target = 1.5 * STATS_max
# yrange(column, target): room for the tallest bar, its label and the target.
yrange(c, t) = sprintf("stats results every ::1 using %d nooutput; set yrange [0:1.2 * (STATS_max > %g ? STATS_max : %g)]", c, t, t)
target(y, text) = sprintf("set arrow 1 from graph 0, first %g to graph 1, first %g nohead dt 2 lw 1.5 lc rgb '#d62728' front; set label 1 '%s' at graph 0.98, first %g right offset 0,0.6 tc rgb '#d62728' front", y, y, text, y)
set multiplot layout 1,3 title "mTLS reverse proxies on one core, ECDSA P-256 (lower is better)"
set title "proxy CPU per full mTLS handshake (µs)"
eval target(hs_target, "target: 0.6x nginx")
eval yrange(7, hs_target)
plot results every ::1 using 0:7:(int(column(0))+1):xtic(lbl(strcol(1))) with boxes lc variable, \
     "" every ::1 using 0:7:(sprintf("%d", column(7))) with labels offset 0,0.7
set title "proxy CPU per keep-alive request (µs)"
eval target(req_target, "target: 1.5x nginx")
eval yrange(4, req_target)
plot results every ::1 using 0:4:(int(column(0))+1):xtic(lbl(strcol(1))) with boxes lc variable, \
     "" every ::1 using 0:4:(sprintf("%.0f", column(4))) with labels offset 0,0.7
set title "keep-alive p99 latency, 64 connections (ms)"
eval target(p99_target, "target: 1.5x nginx")
eval yrange(3, p99_target)
plot results every ::1 using 0:3:(int(column(0))+1):xtic(lbl(strcol(1))) with boxes lc variable, \
     "" every ::1 using 0:3:(sprintf("%.1f", column(3))) with labels offset 0,0.7
unset multiplot
