# chart.gp: the proxy benchmark at a glance, from proxy.sh's results.tsv.
#   gnuplot -e "results='results.tsv'; out='perf-proxy.svg'" chart.gp
# Three panels, one bar per proxy; lower is better in each.
set terminal svg size 1050,380 dynamic font "sans,12" background rgb "white"
set output out
set datafile separator "\t"
set style fill solid 0.85 border -1
set boxwidth 0.6
set yrange [0:*]
set grid ytics lc rgb "#dddddd"
set xtics nomirror scale 0 font ",11"
set ytics nomirror
set border 3
unset key
set offsets 0, 0, graph 0.15, 0
colors = "#1f77b4 #2ca02c #ff7f0e #9467bd"
set multiplot layout 1,3 title "mTLS reverse proxies on one core, ECDSA P-256 (lower is better)"
set title "proxy CPU per full mTLS handshake (µs)"
plot results every ::1 using 0:7:(int(column(0))+1):xtic(1) with boxes lc variable, \
     "" every ::1 using 0:7:(sprintf("%d", column(7))) with labels offset 0,0.7
set title "proxy CPU per keep-alive request (µs)"
plot results every ::1 using 0:4:(int(column(0))+1):xtic(1) with boxes lc variable, \
     "" every ::1 using 0:4:(sprintf("%.0f", column(4))) with labels offset 0,0.7
set title "keep-alive p99 latency at saturation (ms)"
plot results every ::1 using 0:3:(int(column(0))+1):xtic(1) with boxes lc variable, \
     "" every ::1 using 0:3:(sprintf("%.1f", column(3))) with labels offset 0,0.7
unset multiplot
