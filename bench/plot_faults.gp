# plot_faults.gp -- the fault round's chart, from what
# `flashstock bench --faults --out DIR` writes:
#   gnuplot -e "dir='DIR'" bench/plot_faults.gp
# DIR/faults.png  one panel per sale: answers per second in 100 ms buckets
#                 over the sale's time, the fault window shaded (a killed
#                 process is restarted at its middle: the dotted line), the
#                 offered rate dashed.  The after phase ends the schedule;
#                 answers later than that are requests that waited.
# Data: faults-timeline.dat (one block per sale), faults-vars.gp (the window,
# the rate, the panels' titles, which sales restart a process).
if (!exists("dir")) dir = "."
load dir."/faults-vars.gp"

cols = 2
rows = int((fault_blocks + cols - 1) / cols)
set terminal pngcairo size 1400, (rows * 260 + 60) enhanced font ",10"
set encoding utf8
set output dir."/faults.png"
set multiplot layout rows, cols title sprintf("Fault round: answers per second (100 ms buckets); " . \
    "open loop at %.0f requests/s; fault window shaded, restart at its middle dotted", fault_rate) \
    font ",12"
set grid ytics
set xlabel "seconds since the sale started" offset 0,0.5
set ylabel "thousand answers/s"
set format y "%g"
set yrange [0:*]
set xrange [0:*]
set key top right font ",9"
set style rect fc rgb "#ffcccc" fs solid 0.6 noborder
do for [i=0:fault_blocks - 1] {
  set title word(fault_titles, i + 1) noenhanced
  set object 1 rect from fault_window, graph 0 to 2 * fault_window, graph 1 behind
  unset arrow 1
  if (word(fault_restarts, i + 1) eq "1") {
    set arrow 1 from 1.5 * fault_window, graph 0 to 1.5 * fault_window, graph 1 nohead dt 3 lc rgb "#aa0000"
  }
  plot dir."/faults-timeline.dat" index i using 1:($2 / 1000.0) with steps lw 2 lc rgb "#1f77b4" title "answers/s", \
       fault_rate / 1000.0 with lines dt 2 lw 1 lc rgb "#555555" title "offered"
}
unset multiplot
