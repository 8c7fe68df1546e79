# fileio requests/s (events/s: reads + writes + fsync events), 1 thread, sysbench's defaults
# otherwise (16 KiB blocks, fsync every 100 requests, fsync at the end).
#
# The files are small on purpose: 256 MiB in 16 files, so the whole set fits in the page cache
# and the cases measure the I/O path of each tool (system calls, request generation), not the
# disk. Both tools run in the scratch directory $TMP/work (sbsuite's `file_dir` is "." = that
# working directory) and use the same files: sysbench prepares them before each of its rounds,
# because sbsuite's plan ends with a cleanup step that removes them (and starts with a prepare
# step that reuses them when they are there).
# Targets (issue brief): sync cases ratio >= 0.95, async >= 1.2 (io_uring vs libaio).
FIO_OPTS="--file-total-size=256M --file-num=16"
FIO_SETS="file_total_size=256M file_num=16"
FIO_EPS='/total number of events:/ {e=$5} /total time:/ {t=$3+0} END {printf "%.2f\n", e/t}'

# fio_case NAME TEST_MODE IO_MODE [EXTRA_FLAGS]
fio_case() {
  local name=$1 mode=$2 io=$3 flags=${4:-}
  local sys_flags="" sbs_flags=""
  if [ -n "$flags" ]; then sys_flags="--file-extra-flags=$flags"; sbs_flags="file_extra_flags=$flags"; fi
  ab "fileio-$name" "requests/s" 1 \
    "(cd \"\$TMP/work\" && sysbench fileio $FIO_OPTS prepare >/dev/null) && sys_metric '$FIO_EPS' fileio $FIO_OPTS --file-test-mode=$mode --file-io-mode=$io $sys_flags" \
    "sbs_metric eps workload=fileio $FIO_SETS file_test_mode=$mode file_io_mode=$io $sbs_flags"
}
case_fileio_rndrd() { fio_case rndrd-sync rndrd sync; }
case_fileio_rndwr() { fio_case rndwr-sync rndwr sync; }
case_fileio_rndrw() { fio_case rndrw-sync rndrw sync; }
case_fileio_seqwr() { fio_case seqwr-sync seqwr sync; }
case_fileio_seqrd() { fio_case seqrd-sync seqrd sync; }
case_fileio_rndrd_async() { fio_case rndrd-async rndrd async; }
# O_DIRECT: the reads reach the device, where queue depth (file_async_backlog) matters.
case_fileio_rndrd_async_direct() { fio_case rndrd-async-direct rndrd async direct; }
case_fileio_rndrd_sync_direct() { fio_case rndrd-sync-direct rndrd sync direct; }
