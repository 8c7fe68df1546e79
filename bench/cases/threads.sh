# threads events/s, default yields (1000) and locks (8), across thread counts (#14 item 7: the
# contention at 64–512 threads is what differed). sysbench 1.0.20 prints no rate for this test:
# events/s = total number of events / total time (both tools count the events still running at
# the time limit and stretch the total time by them alike).
#
#   bench/sysbench-compare.sh 5 5 threads_t2 threads_t4 threads_t16 threads_t64 threads_t128 \
#     threads_t256 threads_t512
threads_case() {
  local t=$1
  ab "threads-t$t" "events/s" 1 \
    "sys_metric '/total time:/ {t = \$3 + 0} /total number of events:/ {n = \$5} END {print n / t}' threads --threads=$t" \
    "sbs_metric eps workload=threads threads=$t"
}
THREADS_SWEEP="2 4 16 64 128 256 512"
for t in $THREADS_SWEEP; do
  eval "case_threads_t$t() { threads_case $t; }"
done
