#!/usr/bin/env python3
"""Hostile workloads (#26): what a stop leaves behind, measured.

Each case runs the real binary on a workload that misbehaves (a Lua event, top level or prepare
that loops, a custom transaction of 10^12 statements, a load of 10^14 rows, a script allocating
without end, a statement the server never finishes) and prints, per case:

  wall       seconds from start to exit
  rss_mb     peak resident set size of sbsuite (wait4's ru_maxrss)
  exit       exit code (130 after the SIGINT a case sends)
  stmts      statements of the case's database still running on the server 2 s after the
             hostile step ended (information_schema.PROCESSLIST / pg_stat_activity)
  threads    worker threads of the hostile step still alive after it ended (sampled in
             /proc/PID/task during the `cpu` step that follows it, less the cpu step's own)
  target     whether the case met #26's target: ends within forced_shutdown + 5 s (after its
             time limit; after the SIGINT for the interrupted ones; after 10 s for a top-level
             loop), peak RSS under 200 MB beyond the Lua limit (512M) for the memory bomb and
             under 200 MB for the rest, 0 statements, 0 threads

Usage: bench/hostile.py [BIN]   (default: target/release/sbsuite, built if missing)
Needs MariaDB on 127.0.0.1:3306 (root) and PostgreSQL on 127.0.0.1:5432 (postgres), as the
tests do; a database `sbs_hostile` is created and dropped on each.
"""

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DB = "sbs_hostile"
FORCED = 1  # forced_shutdown of the timed cases, seconds
TIME = 3  # time of the timed cases, seconds


def binary():
    if len(sys.argv) > 1:
        return os.path.abspath(sys.argv[1])
    path = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")),
                        "release", "sbsuite")
    if not os.path.exists(path):
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    return path


def mysql(sql, db=None):
    cmd = ["mysql", "--user=root", "--host=127.0.0.1", "--port=3306", "-N", "-B", "-e", sql]
    if db:
        cmd.insert(1, f"--database={db}")
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()


def psql(sql, db="postgres"):
    cmd = ["psql", "--host=127.0.0.1", "--port=5432", "--username=postgres", "--no-psqlrc",
           "-qAt", "-d", db, "-c", sql]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()


def fresh_databases():
    mysql(f"DROP DATABASE IF EXISTS {DB}; CREATE DATABASE {DB}")
    psql(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
    psql(f"CREATE DATABASE {DB}")


def drop_databases():
    mysql(f"DROP DATABASE IF EXISTS {DB}")
    psql(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")


def statements(driver):
    """Statements of the case's database running on the server now."""
    if driver == "mysql":
        return int(mysql("SELECT COUNT(*) FROM information_schema.PROCESSLIST "
                         f"WHERE DB = '{DB}' AND COMMAND = 'Query' AND ID <> CONNECTION_ID()"))
    if driver == "pgsql":
        return int(psql("SELECT COUNT(*) FROM pg_stat_activity "
                        f"WHERE datname = '{DB}' AND state = 'active' AND pid <> pg_backend_pid()"))
    return 0


def worker_threads(pid):
    """sbsuite's worker threads (named `sbsuite-worker-N`, 15 characters shown)."""
    n = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{task}/comm") as f:
                    if f.read().startswith("sbsuite-worker"):
                        n += 1
            except OSError:
                pass
    except OSError:
        pass
    return n


TARGETS = {
    "mysql": f'[target]\ndriver = "mysql"\nhosts = ["127.0.0.1:3306"]\nuser = "root"\ndatabase = "{DB}"\n',
    "pgsql": f'[target]\ndriver = "pgsql"\nhosts = ["127.0.0.1:5432"]\nuser = "postgres"\ndatabase = "{DB}"\n',
    "none": "",
}


def timed_suite(target, workload, extra=""):
    """The hostile step (2 threads, TIME s, forced_shutdown FORCED), then a 3 s cpu step."""
    return f"""[suite]
name = "hostile"
on_error = "continue"

{TARGETS[target]}
[defaults]
time = {TIME}
forced_shutdown = {FORCED}
threads = 2

[matrix]
workload = [{workload}, "cpu"]
{extra}
"""


ENDLESS_REPEAT = """
[workloads.forever]
schema = ["CREATE TABLE spin (id INTEGER NOT NULL PRIMARY KEY, v BIGINT)"]
cleanup = ["DROP TABLE IF EXISTS spin"]

[[workloads.forever.load]]
table = "spin"
rows = 4
columns = [{ name = "id", gen = "row" }, { name = "v", gen = { const = 0 } }]

[workloads.forever.transactions.endless]
let = { row = "thread % 4 + 1" }
steps = [{ repeat = "1000000000000", steps = [{ sql = "UPDATE spin SET v = v + 1 WHERE id = :row" }] }]
"""

HUGE_LOAD = """
[workloads.huge]
schema = ["CREATE TABLE big (id BIGINT NOT NULL PRIMARY KEY, v INTEGER)"]
cleanup = ["DROP TABLE IF EXISTS big"]

[workloads.huge.options]
n = { type = "int", default = 1, min = 1, max = 10 }

[[workloads.huge.load]]
table = "big"
rows = "n * 100000000000000"
columns = [{ name = "id", gen = "row" }, { name = "v", gen = { const = 0 } }]

[workloads.huge.transactions.one]
steps = [{ sql = "SELECT COUNT(*) FROM big WHERE id = 1" }]
"""


def slow_check_suite(target, sql):
    return f"""[suite]
name = "hostile"
on_error = "continue"

{TARGETS[target].replace("[target]", "[target]" + chr(10) + "query_timeout = 3")}
[defaults]
time = 1
check = true

[matrix]
workload = ["slow", "cpu"]

[workloads.slow]
schema = ["CREATE TABLE t (id INTEGER NOT NULL PRIMARY KEY)"]
cleanup = ["DROP TABLE IF EXISTS t"]

[workloads.slow.transactions.one]
steps = [{{ sql = "SELECT COUNT(*) FROM t" }}]

[[workloads.slow.checks]]
name = "a statement the server never finishes"
sql = "{sql}"
expect = 0
"""


def lua_suite(workload, extra=""):
    return f"""[suite]
name = "hostile"
on_error = "continue"

[defaults]
time = {TIME}
forced_shutdown = {FORCED}
threads = 2
{extra}
[matrix]
workload = [{workload}, "cpu"]
"""


SCRIPTS = {
    "loop_event.lua": "function event()\n  local x = 0\n  while true do x = x + 1 end\nend\n",
    "loop_top.lua": "while true do end\nfunction event() end\n",
    "loop_prepare.lua": "function prepare()\n  print('preparing')\n  while true do end\nend\n"
                        "function event() end\n",
    "bomb.lua": "function event()\n  local t = {}\n"
                "  for i = 1, 100 do t[i] = string.rep('x', 256 * 1024 * 1024) .. i end\nend\n",
}

# name, suite text, driver whose statements are counted, how long after start the hostile
# step must end at the latest (the target), SIGINT after this many seconds (None: none),
# extra RSS allowance in MB (the Lua limit for the bomb).
CASES = [
    ("lua event loops", lua_suite('{ script = "loop_event.lua" }'), "none",
     TIME + FORCED + 5, None, 0),
    ("lua top level loops", lua_suite('{ script = "loop_top.lua" }'), "none", 10 + 5, None, 0),
    ("lua prepare loops + SIGINT", lua_suite('{ script = "loop_prepare.lua" }'), "none", None,
     2.0, 0),
    ("lua memory bomb (512M)", lua_suite('{ script = "bomb.lua" }'), "none", TIME + FORCED + 5,
     None, 512),
    ("custom repeat 1e12, MariaDB", timed_suite("mysql", '"forever"', ENDLESS_REPEAT), "mysql",
     TIME + FORCED + 5, None, 0),
    ("custom repeat 1e12, PostgreSQL", timed_suite("pgsql", '"forever"', ENDLESS_REPEAT),
     "pgsql", TIME + FORCED + 5, None, 0),
    ("custom load 1e14 rows + SIGINT, PostgreSQL", timed_suite("pgsql", '"huge"', HUGE_LOAD),
     "pgsql", None, 5.0, 0),
    ("statement past query_timeout, MariaDB",
     slow_check_suite("mysql", "SELECT BENCHMARK(100000000000, MD5(RAND()))"), "mysql", None,
     None, 0),
    ("statement past query_timeout, PostgreSQL",
     slow_check_suite("pgsql", "SELECT pg_sleep(100000)::text::int"), "pgsql", None, None, 0),
]


def run_case(bin_path, name, suite, driver, bound, sigint, rss_extra):
    work = tempfile.mkdtemp(prefix="sbs-hostile-")
    for f, text in SCRIPTS.items():
        with open(os.path.join(work, f), "w") as out:
            out.write(text)
    with open(os.path.join(work, "hostile.toml"), "w") as out:
        out.write(suite)
    fresh_databases()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SBSUITE_")}
    start = time.monotonic()
    child = subprocess.Popen(
        [bin_path, "run", "hostile.toml", "--progress", "plain", "--results-dir", "results"],
        cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    seen = []
    marks = {}

    def read():
        started = 0
        for raw in iter(child.stdout.readline, b""):
            line = raw.decode(errors="replace")
            seen.append(line)
            if "Threads started!" in line:
                started += 1
                if started == 2:
                    marks["next_step"] = time.monotonic()
            if line.startswith("==>") and "run cpu" in line and "next_header" not in marks:
                marks["next_header"] = time.monotonic()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    alive_stmts, alive_threads = None, None
    signalled = None
    while child.poll() is None:
        now = time.monotonic()
        if sigint is not None and signalled is None and now - start >= sigint:
            child.send_signal(2)
            signalled = now
        if "next_step" in marks and alive_threads is None:
            # The cpu step runs 2 threads of its own; anything more is the hostile step's.
            alive_threads = max(0, worker_threads(child.pid) - 2)
        if "next_header" in marks and alive_stmts is None and now - marks["next_header"] >= 2:
            alive_stmts = statements(driver)
        if now - start > 300:
            child.kill()
        time.sleep(0.05)
    code = child.returncode
    end = time.monotonic()
    reader.join(timeout=5)
    if alive_stmts is None:
        time.sleep(max(0.0, 2 - (time.monotonic() - end)))
        alive_stmts = statements(driver)
    if alive_threads is None:
        alive_threads = 0  # the process is gone: nothing of it runs
    rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    wall = end - start
    hostile_end = marks.get("next_header", end) - start
    shutil.rmtree(work, ignore_errors=True)
    ok = True
    if bound is not None and hostile_end > bound:
        ok = False
    if signalled is not None and end - signalled > 5:
        ok = False
    if rss_mb > rss_extra + 200:
        ok = False
    if alive_stmts or alive_threads:
        ok = False
    return wall, hostile_end, rss_mb, code, alive_stmts, alive_threads, ok, "".join(seen)


def main():
    bin_path = binary()
    print(f"sbsuite: {bin_path}")
    print(f"{'case':46} {'wall':>6} {'step':>6} {'rss_mb':>7} {'exit':>5} {'stmts':>6} "
          f"{'threads':>8}  target")
    failed = 0
    try:
        for case in CASES:
            # ru_maxrss of RUSAGE_CHILDREN is the largest child so far: one process per case.
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(r)
                result = run_case(bin_path, *case)
                os.write(w, repr(result[:7]).encode())
                os._exit(0)
            os.close(w)
            data = b""
            while chunk := os.read(r, 65536):
                data += chunk
            os.waitpid(pid, 0)
            wall, step, rss, code, stmts, threads, ok = eval(data.decode())
            failed += not ok
            print(f"{case[0]:46} {wall:6.1f} {step:6.1f} {rss:7.0f} {str(code):>5} {stmts:>6} "
                  f"{threads:>8}  {'met' if ok else 'MISSED'}", flush=True)
    finally:
        drop_databases()
    print(f"{len(CASES) - failed} of {len(CASES)} cases met the target")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
