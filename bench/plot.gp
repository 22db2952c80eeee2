# plot.gp -- the bench's plots, from the data `flashstock-bench --out DIR` writes:
#   gnuplot -e "dir='DIR'" bench/plot.gp
# DIR/throughput.png  ops/s of every row (log scale), one bar per row
# DIR/latency-<workload>.png  latency percentile curves of every engine on
#                     that workload; x is 1/(1-p) on a log axis (the usual
#                     HdrHistogram view: 10 = p90, 100 = p99, 1000 = p99.9)
if (!exists("dir")) dir = "."

set terminal pngcairo size 1400,680 noenhanced font ",10"
set datafile separator whitespace
# ten distinguishable colours (a workload plot has up to nine curves)
set linetype 1 lc rgb "#1f77b4" lw 2
set linetype 2 lc rgb "#ff7f0e" lw 2
set linetype 3 lc rgb "#2ca02c" lw 2
set linetype 4 lc rgb "#d62728" lw 2
set linetype 5 lc rgb "#9467bd" lw 2
set linetype 6 lc rgb "#8c564b" lw 2
set linetype 7 lc rgb "#e377c2" lw 2
set linetype 8 lc rgb "#7f7f7f" lw 2
set linetype 9 lc rgb "#bcbd22" lw 2
set linetype 10 lc rgb "#17becf" lw 2
set linetype cycle 10

# --- throughput by engine -------------------------------------------------
set output dir."/throughput.png"
set title "Throughput by engine (ops/s, log scale; same machine, same run)"
set style data histograms
set style fill solid 0.8 border -1
set boxwidth 0.8
set logscale y
set yrange [1000:*]
set ylabel "ops/s"
set grid ytics
set xtics rotate by -40 left font ",9"
set bmargin 11
set rmargin 12
unset key
plot dir."/throughput.dat" using 2:xtic(1) linecolor rgb "#4477aa"
unset logscale y
set yrange [*:*]
unset style data
set xtics norotate font ",10"
set bmargin
set rmargin

# --- latency percentile curves, one plot per workload --------------------
workloads = "hot zipf dedup mixed"
do for [wl in workloads] {
  files = system("ls ".dir."/curve-*-".wl."-*.dat 2>/dev/null")
  if (strlen(files) > 0) {
    set output dir."/latency-".wl.".png"
    set title "Latency by percentile, workload ".wl." (log-log)"
    set logscale x
    set logscale y
    set xlabel "percentile"
    set ylabel "latency (ns)"
    set xtics ("50%%" 2, "90%%" 10, "99%%" 100, "99.9%%" 1000, "99.99%%" 10000, "99.999%%" 100000)
    set key outside right top
    set grid
    plot for [f in files] f using (1.0/(1.0-$1/100.0)):2 with lines linewidth 2 \
         title system("basename ".f." .dat | sed 's/^curve-//'")
    unset logscale x
    unset logscale y
  }
}
