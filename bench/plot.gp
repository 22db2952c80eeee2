# plot.gp -- the bench's plots, from the data `flashstock-bench --out DIR` writes:
#   gnuplot -e "dir='DIR'" bench/plot.gp
# DIR/throughput.png  ops/s of every row (log scale), grouped by workload,
#                     one colour per engine and durability (legend), the
#                     ratio to redis-lua printed on each flashstock bar
#                     (data: throughput-bars.dat, throughput-vars.gp)
# DIR/latency-<workload>.png  latency percentile curves of every engine on
#                     that workload; x is 1/(1-p) on a log axis (the usual
#                     HdrHistogram view: 10 = p90, 100 = p99, 1000 = p99.9),
#                     y in µs on a log axis
# The fault round has its own chart: bench/plot_faults.gp.
if (!exists("dir")) dir = "."

set terminal pngcairo size 1400,700 enhanced font ",11"
set encoding utf8
set datafile separator whitespace
# one colour per series, in report.c's bar_series order: cas-limit, flashstock
# async / sync / none, redis-lua none / sync, redis-lua-pipelined none / sync,
# mysql-cas, mysql-for-update; an engine keeps its hue, sync is the darker one
array colours[10] = ["#7f7f7f", "#2ca02c", "#1b6e1b", "#98df8a", "#f08080", "#c0282d", \
                     "#ffbb78", "#d9730d", "#1f77b4", "#6baed6"]
do for [i=1:10] { set linetype i lc rgb colours[i] lw 2 }
set linetype cycle 10

# --- throughput, grouped by workload ---------------------------------------
load dir."/throughput-vars.gp"
set output dir."/throughput.png"
set title "Throughput by workload and engine (ops/s, log scale; same machine, same run)\n" . \
          "label on a flashstock bar: its ops/s over redis-lua's on that workload " . \
          "(sync against appendfsync always, async against no AOF)"
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y
set format y "10^{%L}"
set yrange [1000:*]
set ylabel "ops/s"
set grid ytics
set xrange [-1:nworkloads * (nseries + 1) - 1]
eval "set xtics (" . workload_tics . ") scale 0 font \",12\""
set key outside right top vertical Left reverse title "engine/durability"
set rmargin 30
plot dir."/throughput-bars.dat" using 1:2:3 with boxes lc variable notitle, \
     "" using 1:($2 * 1.35):(stringcolumn(4) eq "-" ? "" : stringcolumn(4)) \
        with labels font ",10" rotate by 90 left notitle, \
     for [i=1:nseries] NaN with boxes lc (word(series_colours, i) + 0) title word(series_titles, i)
unset logscale y
unset format
set format y "% h"
set yrange [*:*]
set xrange [*:*]
set xtics autofreq font ",11"
set rmargin
unset key

# --- latency percentile curves, one plot per workload --------------------
# a curve takes its engine's colour of the throughput chart
has(f, s) = strstrt(f, s) > 0
colour_of(f) = has(f, "curve-cas-limit-") ? 1 : \
    has(f, "curve-flashstock-") ? (has(f, "-async.dat") ? 2 : has(f, "-sync.dat") ? 3 : 4) : \
    has(f, "curve-redis-lua-pipelined-") ? (has(f, "-sync.dat") ? 8 : 7) : \
    has(f, "curve-redis-lua-") ? (has(f, "-sync.dat") ? 6 : 5) : \
    has(f, "curve-mysql-cas-") ? 9 : 10
workloads = "hot zipf dedup mixed"
do for [wl in workloads] {
  files = system("ls ".dir."/curve-*-".wl."-*.dat 2>/dev/null")
  if (strlen(files) > 0) {
    set output dir."/latency-".wl.".png"
    set title "Latency by percentile, workload ".wl." (log-log)"
    set logscale x
    set logscale y
    set xlabel "percentile"
    set ylabel "latency"
    set xtics ("50%%" 2, "90%%" 10, "99%%" 100, "99.9%%" 1000, "99.99%%" 10000, "99.999%%" 100000)
    set ytics ("10 ns" 0.01, "100 ns" 0.1, "1 µs" 1, "10 µs" 10, "100 µs" 100, "1 ms" 1000, \
               "10 ms" 10000, "100 ms" 100000, "1 s" 1000000)
    set key outside right top noreverse title ""
    set grid
    plot for [f in files] f using (1.0/(1.0-$1/100.0)):($2 / 1000.0) with lines linewidth 2 \
         lc colour_of(f) title system("basename ".f." .dat | sed 's/^curve-//'")
    unset logscale x
    unset logscale y
    set ytics autofreq
  }
}
