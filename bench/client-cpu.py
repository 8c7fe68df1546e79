#!/usr/bin/env python3
"""Client CPU per transaction and throughput of sbsuite against its peers (#32), in
alternating rounds on the same servers and the same data.

    bench/client-cpu.py [--rounds N] [--seconds S] [--scale K] [--cases PATTERNS] [--uring]
                        [--mux K[,K...]] [--baseline BIN]

Cases (each a peer and sbsuite doing the same work):
  tpcb-pgsql-cN      pgbench 15 `-M prepared -n -c N -j min(N, cores)` against the TOML TPC-B
                     (suites/workloads/tpcb.toml, `sbsuite run`, dataset = "existing") on the
                     same `pgbench -i -s SCALE` tables, N = 8 and 32
  WORKLOAD-DRIVER-tN sysbench 1.0.20 against `sbsuite sysbench` (oltp_point_select and
                     oltp_read_write, MariaDB and PostgreSQL, 4 × 10,000-row tables that
                     sysbench prepares once), N = 4, 32 and 256 threads

Every client runs in plain TCP: pgbench and sysbench with PGSSLMODE=disable, the TPC-B suite
with `ssl = "disabled"` (a pgsql target's default is libpq's `prefer`, which encrypts against
a server that has TLS on, as this one has).

Each round runs the case's tools one after the other, the first one changing from round to
round (ABBA for two tools). Client CPU is counted inside the measured window only
(bench/cpu-window.py: user + system ticks of the process while all its threads run), and
divided by the transactions of that window (the tool's own tps × the window's length); a
sysbench event is a transaction. Per case it prints the medians of throughput and CPU µs per
transaction of every tool, and the per-round ratios sbsuite/peer as median [min–max].
Targets (#32): CPU/txn ≤ 0.85× pgbench and ≤ 0.70× sysbench, throughput ≥ 1.0×.

The last columns judge each case against those targets: `best` is the sbsuite mode (threads,
muxK, uring) with the lowest median CPU ratio among those whose median throughput ratio is
≥ 1.0 (the lowest overall when none is), `best_tps_ratio` and `best_cpu_ratio` its medians,
`target` the case's CPU target and `met` whether both hold. `peer_user_share` is the peer's
user time over its CPU (user + system) inside the window, and `floor` the CPU ratio the best
mode would have with no user time at all: its system time per transaction over the peer's
CPU per transaction, per round, median. A floor above the target means that no work in
sbsuite's own code can meet it; only fewer or cheaper kernel entries per round trip can.

--uring adds sbsuite with SBSUITE_WIRE_IO=uring (one io_uring_enter per round trip instead of
a write and a blocking read) as a third tool in the rotation: `uring_*` are its ratios to the
peer, `uring_vs_blocking_cpu` its CPU per transaction over the default's in the same round.
--mux K adds sbsuite with `client_threads = K` (K carrier threads running the connections'
workers as coroutines; `--client-threads=K` for `sbsuite sysbench`): `muxK_*` are its ratios
to the peer, `muxK_vs_threads_cpu` its CPU per transaction over one thread per connection's.
A comma-separated list (`--mux 1,2`) adds one such tool per K.
--baseline BIN adds an earlier sbsuite binary to the rotation, run exactly as sbsuite is (and,
with --mux, as the carriers are): `base_cpu` is sbsuite's CPU per transaction over the
baseline's in the same round (and `muxK_base_cpu` the carriers'), so a change to the client is
measured against the build before it on the same machine at the same moment.
--cases keeps the cases whose name contains PATTERN (a comma-separated list of patterns).

Needs MariaDB as root on 127.0.0.1:3306 and PostgreSQL as postgres on 127.0.0.1:5432 (plain
TCP for every client: PGSSLMODE=disable), sysbench, pgbench and GNU time. max_connections is
raised for the 256-thread cases when it is too small (MariaDB: SET GLOBAL; PostgreSQL: ALTER
SYSTEM and a restart with pg_ctlcluster) and restored at the end. Builds sbsuite in release
mode (in $CARGO_TARGET_DIR when set) unless BENCH_SBSUITE names the binary. BENCH_DB names
the database (default sbsuite_cpu; created, and dropped at the end).
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DB = os.environ.get("BENCH_DB", "sbsuite_cpu")
CORES = os.cpu_count() or 1
PG = ["--host=127.0.0.1", "--port=5432", "--username=postgres"]


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def mysql(sql, db=""):
    return sh(["mysql", "--user=root", "--host=127.0.0.1", "-N", "-B", "-e", sql] + ([db] if db else [])).strip()


def psql(sql, db="postgres"):
    return sh(["psql", *PG, "--no-psqlrc", "-qAt", "-d", db, "-c", sql]).strip()


def sysbench_args(driver):
    if driver == "mysql":
        return ["--mysql-host=127.0.0.1", "--mysql-port=3306", "--mysql-user=root", f"--mysql-db={DB}"]
    return ["--db-driver=pgsql", "--pgsql-host=127.0.0.1", "--pgsql-port=5432", "--pgsql-user=postgres", f"--pgsql-db={DB}"]


class Tool:
    """One side of a case: a command line and how to read its throughput."""

    def __init__(self, name, argv, tps_of, env=None):
        self.name, self.argv, self.tps_of, self.env = name, argv, tps_of, env or {}


def sysbench_tps(out, _dir):
    m = re.search(r"transactions:\s+\d+\s+\(([\d.]+) per sec", out)
    return float(m.group(1)) if m else None


def pgbench_tps(out, _dir):
    m = re.search(r"tps = ([\d.]+) \(without initial connection time\)", out)
    return float(m.group(1)) if m else None


def results_tps(_out, run_dir):
    import csv

    rows = [r for p in Path(run_dir).rglob("results.csv") for r in csv.DictReader(open(p))]
    runs = [r for r in rows if r.get("status") == "ok" and r.get("tps")]
    return float(runs[-1]["tps"]) if runs else None


def measure(tool, tmp):
    """(tps, client CPU, user and system µs per transaction inside the window) of one run of
    `tool`."""
    cpu_file = Path(tmp) / "cpu"
    run_dir = Path(tmp) / "results"
    shutil.rmtree(run_dir, ignore_errors=True)
    argv = [a.replace("{RESULTS}", str(run_dir)) for a in tool.argv]
    env = {k: v for k, v in os.environ.items() if k != "SBSUITE_WIRE_IO"}
    env.update(PGSSLMODE="disable", **tool.env)
    p = subprocess.run(
        [sys.executable, str(ROOT / "bench/cpu-window.py"), str(cpu_file), "--", *argv],
        capture_output=True, text=True, env=env, cwd=tmp,
    )
    if p.returncode != 0:
        sys.exit(f"{tool.name} failed ({p.returncode}): {' '.join(argv)}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    tps = tool.tps_of(p.stdout, run_dir)
    if not tps:
        sys.exit(f"{tool.name}: no throughput in its output\n{p.stdout[-3000:]}")
    cpu, wall, _total, user, system = map(float, cpu_file.read_text().split())
    per_txn = 1e6 / (tps * wall)
    return tps, cpu * per_txn, user * per_txn, system * per_txn


def cases(sbs, seconds, scale, uring, mux, tmp):
    out = []
    suite_dir = Path(tmp)
    for clients in (8, 32):
      muxed = {}
      for carriers in mux + [0]:
        suite = suite_dir / f"tpcb-{clients}-{carriers}.toml"
        suite.write_text(f"""[suite]
name = "tpcb-cpu"
workloads = ["{ROOT}/suites/workloads/tpcb.toml"]
dataset = "existing"
server_cost = false

[target]
driver = "pgsql"
hosts = ["127.0.0.1:5432"]
user = "postgres"
database = "{DB}"
ssl = "disabled"

[defaults]
workload = "tpcb"
scale = {scale}
threads = {clients}
time = {seconds}
client_threads = {carriers}
""")
        if carriers:
            muxed[carriers] = [sbs, "run", str(suite), "--progress", "off", "--results-dir", "{RESULTS}"]
            continue
        ours = [sbs, "run", str(suite), "--progress", "off", "--results-dir", "{RESULTS}"]
        peer = Tool("pgbench", ["pgbench", *PG, "-n", "-M", "prepared", "-c", str(clients),
                                "-j", str(min(clients, CORES)), "-T", str(seconds), DB], pgbench_tps)
        out.append((f"tpcb-pgsql-c{clients}", "pgsql", peer, ours, results_tps, muxed))
    for workload in ("oltp_point_select", "oltp_read_write"):
        for driver in ("mysql", "pgsql"):
            for threads in (4, 32, 256):
                args = [workload, *sysbench_args(driver), "--tables=4", "--table-size=10000",
                        f"--threads={threads}", f"--time={seconds}", "run"]
                peer = Tool("sysbench", ["sysbench", *args], sysbench_tps)
                muxed = {k: [sbs, "sysbench", f"--client-threads={k}", *args] for k in mux}
                out.append((f"{workload}-{driver}-t{threads}", driver, peer, [sbs, "sysbench", *args], sysbench_tps, muxed))
    tools = []
    for name, driver, peer, ours_argv, ours_tps, muxed in out:
        t = [peer, Tool("sbsuite", ours_argv, ours_tps)]
        if uring:
            t.append(Tool("uring", ours_argv, ours_tps, {"SBSUITE_WIRE_IO": "uring"}))
        for k, argv in muxed.items():
            t.append(Tool(f"mux{k}", argv, ours_tps))
        tools.append((name, driver, t))
    return tools


def spread(values):
    return f"{statistics.median(values):.3f} [{min(values):.3f}–{max(values):.3f}]"


def judge(peer, modes, target):
    """The case's verdict columns (see the module's doc): the peer's user share, the best
    sbsuite mode, its medians, the target, whether it is met, and the best mode's floor."""
    med = statistics.median
    share = med(x[2] / x[1] for x in peer)
    rated = []
    for name, runs in modes.items():
        if runs:
            tps = med(r[0] / q[0] for q, r in zip(peer, runs))
            cpu = med(r[1] / q[1] for q, r in zip(peer, runs))
            floor = med(r[3] / q[1] for q, r in zip(peer, runs))
            rated.append((tps < 1.0, cpu, name, tps, floor))
    _, cpu, name, tps, floor = min(rated)
    met = "yes" if tps >= 1.0 and cpu <= target else "no"
    return [f"{share:.2f}", name, f"{tps:.3f}", f"{cpu:.3f}", f"{target:.2f}", met, f"{floor:.3f}"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--scale", type=int, default=10, help="pgbench -i scale for the TPC-B cases")
    ap.add_argument("--cases", default="", help="keep cases whose name contains one of these (comma-separated)")
    ap.add_argument("--uring", action="store_true", help="also sbsuite with SBSUITE_WIRE_IO=uring")
    ap.add_argument("--mux", default="", metavar="K[,K...]",
                    help="also sbsuite with client_threads = K (K carrier threads, #32), per K")
    ap.add_argument("--baseline", metavar="BIN", help="also this earlier sbsuite binary, run as sbsuite is")
    a = ap.parse_args()
    try:
        a.mux = [int(k) for k in a.mux.split(",") if k.strip()]
    except ValueError:
        sys.exit(f"--mux: {a.mux!r} is not a comma-separated list of carrier counts (e.g. 1,2)")
    if any(k < 1 for k in a.mux):
        sys.exit("--mux: a carrier count is at least 1")
    for tool in ("sysbench", "pgbench", "mysql", "psql"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is not installed (apt-get install -y sysbench postgresql-client mariadb-client)")
    sbs = os.environ.get("BENCH_SBSUITE")
    if sbs:
        sbs = str(Path(sbs).resolve())
    else:
        subprocess.run(["cargo", "build", "--release", "--quiet"], check=True, cwd=ROOT)
        sbs = str(Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "release/sbsuite")
    tmp = tempfile.mkdtemp()
    all_cases = cases(sbs, a.seconds, a.scale, a.uring, a.mux, tmp)
    if a.cases:
        pats = a.cases.split(",")
        all_cases = [c for c in all_cases if any(p in c[0] for p in pats)]
    if a.baseline:
        base = str(Path(a.baseline).resolve())
        for _name, _driver, tools in all_cases:
            for t in list(tools):
                if t.name == "sbsuite" or t.name.startswith("mux"):
                    tools.append(Tool(f"base_{t.name}", [base, *t.argv[1:]], t.tps_of, t.env))
    drivers = {c[1] for c in all_cases}
    needs = {"mysql": False, "pgsql": False}
    restore = []
    print(f"# load before: {os.getloadavg()}, {a.rounds} rounds × {a.seconds} s, sbsuite {sbs}", flush=True)
    try:
        big = max((int(re.search(r"-[tc](\d+)$", c[0]).group(1)) for c in all_cases), default=0)
        if "mysql" in drivers:
            mysql(f"CREATE DATABASE IF NOT EXISTS {DB}")
            old = int(mysql("SELECT @@GLOBAL.max_connections"))
            if old < big + 20:
                mysql(f"SET GLOBAL max_connections = {big + 64}")
                restore.append(lambda: mysql(f"SET GLOBAL max_connections = {old}"))
            needs["mysql"] = True
        if "pgsql" in drivers:
            if psql(f"SELECT 1 FROM pg_database WHERE datname = '{DB}'") != "1":
                psql(f"CREATE DATABASE {DB}")
            free = int(psql("SELECT current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int"))
            if free < big + 8:
                cluster = [sorted(os.listdir("/etc/postgresql"))[-1], "main"]
                psql(f"ALTER SYSTEM SET max_connections = {big + 64}")
                sh(["pg_ctlcluster", "--skip-systemctl-redirect", *cluster, "restart"])

                def undo():
                    psql("ALTER SYSTEM RESET max_connections")
                    sh(["pg_ctlcluster", "--skip-systemctl-redirect", *cluster, "restart"])

                restore.append(undo)
            needs["pgsql"] = True
        for driver in ("mysql", "pgsql"):
            if needs[driver] and any(c[1] == driver and not c[0].startswith("tpcb") for c in all_cases):
                base = ["oltp_read_write", *sysbench_args(driver), "--tables=4", "--table-size=10000"]
                env = dict(os.environ, PGSSLMODE="disable")
                subprocess.run(["sysbench", *base, "cleanup"], check=True, capture_output=True, env=env)
                subprocess.run(["sysbench", *base, "prepare"], check=True, capture_output=True, env=env)
        if any(c[0].startswith("tpcb") for c in all_cases):
            sh(["pgbench", *PG, "-i", "-q", "-s", str(a.scale), DB], env=dict(os.environ, PGSSLMODE="disable"))
        head = "case,rounds,peer,peer_tps,sbsuite_tps,tps_ratio,peer_cpu_us_per_txn,sbsuite_cpu_us_per_txn,cpu_ratio"
        if a.uring:
            head += ",uring_tps_ratio,uring_cpu_ratio,uring_vs_blocking_cpu"
        for k in a.mux:
            head += f",mux{k}_tps_ratio,mux{k}_cpu_ratio,mux{k}_vs_threads_cpu"
        if a.baseline:
            head += ",base_cpu" + "".join(f",mux{k}_base_cpu" for k in a.mux)
        head += ",peer_user_share,best,best_tps_ratio,best_cpu_ratio,target,met,floor"
        print(head, flush=True)
        for name, _driver, tools in all_cases:
            got = {t.name: [] for t in tools}
            for r in range(a.rounds):
                order = tools[r % len(tools):] + tools[:r % len(tools)]
                if len(tools) == 2 and r % 4 in (1, 2):
                    order = [tools[1], tools[0]]
                elif len(tools) == 2:
                    order = list(tools)
                for t in order:
                    got[t.name].append(measure(t, tmp))
                    time.sleep(1)
            peer = tools[0].name
            p, s = got[peer], got["sbsuite"]
            med = lambda xs, i: statistics.median(x[i] for x in xs)
            line = [name, str(a.rounds), peer, f"{med(p, 0):.1f}", f"{med(s, 0):.1f}",
                    spread([b[0] / a_[0] for a_, b in zip(p, s)]),
                    f"{med(p, 1):.1f}", f"{med(s, 1):.1f}",
                    spread([b[1] / a_[1] for a_, b in zip(p, s)])]
            if a.uring:
                u = got["uring"]
                line += [spread([x[0] / a_[0] for a_, x in zip(p, u)]),
                         spread([x[1] / a_[1] for a_, x in zip(p, u)]),
                         spread([x[1] / b[1] for x, b in zip(u, s)])]
            for k in a.mux:
                m = got[f"mux{k}"]
                line += [spread([x[0] / a_[0] for a_, x in zip(p, m)]),
                         spread([x[1] / a_[1] for a_, x in zip(p, m)]),
                         spread([x[1] / b[1] for x, b in zip(m, s)])]
            if a.baseline:
                line.append(spread([x[1] / b[1] for x, b in zip(s, got["base_sbsuite"])]))
                for k in a.mux:
                    line.append(spread([x[1] / b[1] for x, b in zip(got[f"mux{k}"], got[f"base_mux{k}"])]))
            line += judge(p, {"threads": s, "uring": got.get("uring"),
                              **{f"mux{k}": got[f"mux{k}"] for k in a.mux}},
                          0.85 if peer == "pgbench" else 0.70)
            print(",".join(line), flush=True)
    finally:
        if needs["mysql"]:
            mysql(f"DROP DATABASE IF EXISTS {DB}")
        if needs["pgsql"]:
            psql(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
        for undo in restore:
            undo()
        shutil.rmtree(tmp, ignore_errors=True)
        print(f"# load after: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
