# cpu events/s, 1 and 2 threads, prime 20000 (issue #3's benchmark list).
cpu_case() {
  local t=$1
  ab "cpu-t$t-prime20000" "events/s" 1 \
    "sys_metric '/events per second:/ {print \$4}' cpu --threads=$t --cpu-max-prime=20000" \
    "sbs_metric eps workload=cpu threads=$t cpu_max_prime=20000"
}
case_cpu_t1() { cpu_case 1; }
case_cpu_t2() { cpu_case 2; }
