# mutex total time (lower is better), 2 threads, 20000 locks of default loops (10000) each: one
# event per thread that finishes in well under a second, long before the --time=SECS that
# sys_metric adds, so both tools run it to completion.
case_mutex_t2() {
  ab "mutex-t2-locks20000" "seconds" 0 \
    "sys_metric '/total time:/ {print \$3 + 0}' mutex --threads=2 --mutex-locks=20000" \
    "sbs_metric seconds workload=mutex threads=2 mutex_locks=20000"
}
