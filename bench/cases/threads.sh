# threads events/s, 2 threads, default yields (1000) and locks (8). sysbench 1.0.20 prints no
# rate for this test: events/s = total number of events / total time.
case_threads_t2() {
  ab "threads-t2" "events/s" 1 \
    "sys_metric '/total time:/ {t = \$3 + 0} /total number of events:/ {n = \$5} END {print n / t}' threads --threads=2" \
    "sbs_metric eps workload=threads threads=2"
}
