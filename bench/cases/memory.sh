# memory MiB/s, 1 thread: 1K and 1M blocks × seq/rnd × read/write (issue #3's benchmark list).
# sysbench prints `X MiB transferred (Y MiB/sec)`; Y is compared with sbsuite's mib_per_s. The
# default total (100G) is far more than SECS seconds can transfer, so both runs are timed.
memory_case() {
  local block=$1 mode=$2 oper=$3
  ab "memory-$block-$mode-$oper" "MiB/s" 1 \
    "sys_metric '/MiB transferred/ {print substr(\$4, 2)}' memory --memory-block-size=$block --memory-access-mode=$mode --memory-oper=$oper" \
    "sbs_metric mib_per_s workload=memory memory_block_size=$block memory_access_mode=$mode memory_oper=$oper"
}
case_memory_1K_seq_read() { memory_case 1K seq read; }
case_memory_1K_seq_write() { memory_case 1K seq write; }
case_memory_1K_rnd_read() { memory_case 1K rnd read; }
case_memory_1K_rnd_write() { memory_case 1K rnd write; }
case_memory_1M_seq_read() { memory_case 1M seq read; }
case_memory_1M_seq_write() { memory_case 1M seq write; }
case_memory_1M_rnd_read() { memory_case 1M rnd read; }
case_memory_1M_rnd_write() { memory_case 1M rnd write; }
