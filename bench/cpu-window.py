#!/usr/bin/env python3
"""Client CPU of a benchmark process inside its measured window, not over its whole life.

    bench/cpu-window.py OUT_CPU_FILE -- COMMAND [ARGS...]

Runs COMMAND (its stdout and stderr pass through), samples /proc/PID/stat (user + system
ticks of the whole process) and the number of its threads every 20 ms, and writes to
OUT_CPU_FILE one line: "CPU_SECONDS WALL_SECONDS TOTAL_CPU_SECONDS USER_SECONDS SYSTEM_SECONDS":
CPU and wall time of the window in which the process had its largest number of threads (the
workers' run: from the first sample at that count to the last one), and that window's CPU split
into user and system (kernel) time. Start-up (suite loading, checks, connecting) and the end
(CSV, histograms, cleanup) fall outside it, so two programs with different fixed costs compare
on what they spend per query while the load runs. TOTAL_CPU_SECONDS is the user + system time
of the whole process (getrusage of the child, as /usr/bin/time reports it). Exits with
COMMAND's exit status.
"""

import os
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def sample(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        # fields[0] is field 3 (state): utime is field 14, stime 15, num_threads 20.
        return time.monotonic(), int(fields[17]), int(fields[11]) / TICK, int(fields[12]) / TICK
    except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
        return None


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit(__doc__)
    out, cmd = sys.argv[1], sys.argv[3:]
    proc = subprocess.Popen(cmd)
    samples = []
    # Polls without reaping (waitid WNOWAIT), so that wait4 below gets the child's rusage.
    while os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        s = sample(proc.pid)
        if s is not None:
            samples.append(s)
        time.sleep(0.02)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    total = usage.ru_utime + usage.ru_stime
    if not samples:
        sys.exit(f"cpu-window: no sample of {cmd[0]} (it ended within 20 ms)")
    top = max(s[1] for s in samples)
    inside = [s for s in samples if s[1] == top]
    (t0, _, user0, sys0), (t1, _, user1, sys1) = inside[0], inside[-1]
    user, system = user1 - user0, sys1 - sys0
    with open(out, "w") as f:
        f.write(f"{user + system:.4f} {t1 - t0:.4f} {total:.4f} {user:.4f} {system:.4f}\n")
    sys.exit(proc.returncode)


if __name__ == "__main__":
    main()
