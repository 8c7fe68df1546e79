//! Per-host credentials (`[target] hosts` entries that are tables with their own `user`,
//! `password`, `port`, `database`) and `prepare_on = "each"`, issue #18, against the real local
//! servers: on MariaDB two logins `sbsuite_u1` and `sbsuite_u2`, both on 127.0.0.1:3306; on
//! PostgreSQL two roles `sbsuite_h1` and `sbsuite_h2` on 127.0.0.1:5432 (`.ci/run` creates
//! them, and makes the roles authenticate by password; created here too when `CI` is not set).
//! Which login ran the statements is read on the server: the workload inserts the server's
//! `CURRENT_USER()` / `current_user` and its connection id with every event. The passwords must
//! appear nowhere sbsuite writes.

use std::path::Path;

use mysql_async::prelude::Queryable;

use crate::common;

use common::db::{my_opts, pg_client, rt};
use common::{all_files_text, run_dir, sbsuite};

const PW: [&str; 2] = ["sbsuite-host-pw-1", "sbsuite-host-pw-2"];
const USERS: [&str; 2] = ["sbsuite_u1", "sbsuite_u2"];

/// Runs `sql` as root and returns the rows of the last statement as text; `None` when the
/// server is unreachable.
fn root(sql: &[String]) -> Option<Vec<Vec<String>>> {
    common::server_lock::share();
    rt().block_on(async {
        let mut c = mysql_async::Conn::new(my_opts(None)).await.ok()?;
        let mut rows = Vec::new();
        for s in sql {
            let got: Vec<mysql_async::Row> =
                c.query(s).await.unwrap_or_else(|e| panic!("{s}: {e}"));
            rows = got
                .into_iter()
                .map(|r| {
                    (0..r.len())
                        .map(|i| match r.as_ref(i) {
                            Some(mysql_async::Value::Bytes(b)) => {
                                String::from_utf8_lossy(b).into_owned()
                            }
                            Some(mysql_async::Value::Int(n)) => n.to_string(),
                            Some(mysql_async::Value::UInt(n)) => n.to_string(),
                            other => format!("{other:?}"),
                        })
                        .collect()
                })
                .collect();
        }
        let _ = c.disconnect().await;
        Some(rows)
    })
}

/// Fresh databases `names` for one test, with the two logins in place; `None` (after saying
/// why) without a server.
fn databases(names: &[&str]) -> Option<()> {
    let mut sql = Vec::new();
    // .ci/run creates the logins; a developer's machine gets them here, the same way.
    if std::env::var_os("CI").is_none() {
        for (user, pw) in USERS.iter().zip(PW) {
            sql.push(format!(
                "CREATE USER IF NOT EXISTS '{user}'@'%' IDENTIFIED BY '{pw}'"
            ));
            sql.push(format!("ALTER USER '{user}'@'%' IDENTIFIED BY '{pw}'"));
            sql.push(format!(
                "GRANT ALL ON `sbsuite\\_t\\_hosts%`.* TO '{user}'@'%'"
            ));
        }
    }
    for db in names {
        sql.push(format!("DROP DATABASE IF EXISTS {db}"));
        sql.push(format!("CREATE DATABASE {db}"));
    }
    if root(&sql).is_none() {
        common::skip("no MySQL/MariaDB server accepts root@127.0.0.1:3306 (.ci/run starts one)");
        return None;
    }
    Some(())
}

fn drop_databases(names: &[&str]) {
    let sql: Vec<String> = names
        .iter()
        .map(|db| format!("DROP DATABASE IF EXISTS {db}"))
        .collect();
    root(&sql);
}

/// A workload that records, with every event, the login and the connection that ran it
/// (`who`), and a `scratch` table that only its cleanup drops.
/// On PostgreSQL the table is opened to every role: the second host's login inserts into the
/// table the first one created.
const WHOAMI: &str = r#"
[workloads.whoami]
summary = "records the login of every statement"
schema = [
  "CREATE TABLE who (login VARCHAR(200), conn BIGINT)",
  { mysql = "", pgsql = "GRANT ALL ON who TO PUBLIC" },
  "CREATE TABLE scratch (id INT)",
]
cleanup = ["DROP TABLE IF EXISTS scratch"]

[workloads.whoami.transactions.record]
autocommit = true
steps = [{ sql = { mysql = "INSERT INTO who (login, conn) VALUES (CURRENT_USER(), CONNECTION_ID())", pgsql = "INSERT INTO who (login, conn) VALUES (current_user, pg_backend_pid())" } }]
"#;

fn suite(dir: &Path, target: &str) -> std::path::PathBuf {
    let driver = if target.contains(":5432") {
        "driver = \"pgsql\"\nssl = \"disable\""
    } else {
        "driver = \"mysql\""
    };
    let text = format!(
        "[suite]\nname = \"hosts\"\n\n[target]\n{driver}\n{target}\n\n[defaults]\nworkload = \"whoami\"\nthreads = 4\ntime = 0\nevents = 400\n{WHOAMI}"
    );
    let path = dir.join("hosts.toml");
    std::fs::write(&path, text).unwrap();
    path
}

const ENV: [(&str, &str); 2] = [("HOSTS_T_PW1", PW[0]), ("HOSTS_T_PW2", PW[1])];

/// `sbsuite ARGS` with the two password variables set: (exit code, stdout, stderr).
fn sbsuite_with_passwords(args: &[&str]) -> (Option<i32>, String, String) {
    let out = sbsuite().args(args).envs(ENV).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `sbsuite run FILE --results-dir RESULTS` with the two password variables set.
fn run_with_passwords(file: &str, results: &Path) -> (Option<i32>, String, String) {
    sbsuite_with_passwords(&[
        "run",
        file,
        "--results-dir",
        results.to_str().unwrap(),
        "--progress",
        "plain",
    ])
}

fn assert_no_password(what: &str, text: &str) {
    for pw in PW {
        assert!(!text.contains(pw), "{what} shows a password:\n{text}");
    }
}

/// `(login, distinct connections, rows)` of table `who` in `db`, by login.
fn logins(db: &str) -> Vec<(String, u64, u64)> {
    root(&[format!(
        "SELECT login, COUNT(DISTINCT conn), COUNT(*) FROM {db}.who GROUP BY login ORDER BY login"
    )])
    .unwrap()
    .into_iter()
    .map(|r| (r[0].clone(), r[1].parse().unwrap(), r[2].parse().unwrap()))
    .collect()
}

fn tables(db: &str) -> Vec<String> {
    root(&[format!(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = '{db}' ORDER BY table_name"
    )])
    .unwrap()
    .into_iter()
    .map(|r| r[0].clone())
    .collect()
}

#[test]
fn each_host_entry_logs_in_with_its_own_user_and_password() {
    const DB: &str = "sbsuite_t_hosts_login";
    if databases(&[DB]).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // [target] user is a login that does not exist: the entries' own users must win; the
    // second entry gives its port apart.
    let file = suite(
        dir.path(),
        &format!(
            "user = \"sbsuite_nobody\"\ndatabase = \"{DB}\"\nhosts = [\n  {{ host = \"127.0.0.1:3306\", user = \"sbsuite_u1\", password = \"{{{{ env.HOSTS_T_PW1 }}}}\" }},\n  {{ host = \"127.0.0.1\", port = 3306, user = \"sbsuite_u2\", password = \"{{{{ env.HOSTS_T_PW2 }}}}\" }},\n]"
        ),
    );
    let file = file.to_str().unwrap();

    for format in ["text", "json"] {
        let (code, out, err) = sbsuite_with_passwords(&["plan", file, "--format", format]);
        assert_eq!(code, Some(0), "{out}{err}");
        assert_no_password("plan", &(out.clone() + &err));
        if format == "text" {
            assert!(
                out.contains("127.0.0.1:3306 (user sbsuite_u1, database sbsuite_t_hosts_login)")
                    && out.contains("(user sbsuite_u2,"),
                "plan shows each host's login: {out}"
            );
        }
    }
    let (code, out, err) = sbsuite_with_passwords(&["validate", file]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_no_password("validate", &(out + &err));

    let results = dir.path().join("results");
    let (code, out, err) = run_with_passwords(file, &results);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_no_password("run's stdout and stderr", &(out + &err));
    assert_no_password(
        "the run directory",
        &all_files_text(&run_dir(&results, "hosts")),
    );

    // 4 threads over 2 hosts, round-robin by connection as sysbench's --mysql-host list:
    // two connections each, every event of each recorded under its own login.
    let seen = logins(DB);
    drop_databases(&[DB]);
    let users: Vec<&str> = seen.iter().map(|(l, _, _)| l.as_str()).collect();
    assert_eq!(users, ["sbsuite_u1@%", "sbsuite_u2@%"], "{seen:?}");
    for (login, conns, rows) in &seen {
        assert_eq!(*conns, 2, "{login}: {seen:?}");
        assert!(*rows > 0, "{login}: {seen:?}");
    }
    assert_eq!(seen.iter().map(|(_, _, r)| r).sum::<u64>(), 400, "{seen:?}");
}

#[test]
fn prepare_on_each_prepares_and_cleans_up_every_host() {
    const DBS: [&str; 2] = ["sbsuite_t_hosts_each_a", "sbsuite_t_hosts_each_b"];
    if databases(&DBS).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Two "shards": each login with its own database; plain [target] user/password unused.
    let file = suite(
        dir.path(),
        &format!(
            "prepare_on = \"each\"\nhosts = [\n  {{ host = \"127.0.0.1:3306\", user = \"sbsuite_u1\", password = \"{{{{ env.HOSTS_T_PW1 }}}}\", database = \"{}\" }},\n  {{ host = \"127.0.0.1:3306\", user = \"sbsuite_u2\", password = \"{{{{ env.HOSTS_T_PW2 }}}}\", database = \"{}\" }},\n]",
            DBS[0], DBS[1]
        ),
    );
    let results = dir.path().join("results");
    let (code, out, err) = run_with_passwords(file.to_str().unwrap(), &results);
    let a = (tables(DBS[0]), logins(DBS[0]));
    let b = (tables(DBS[1]), logins(DBS[1]));
    drop_databases(&DBS);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_no_password("run's output", &(out.clone() + &err));
    assert_no_password(
        "the run directory",
        &all_files_text(&run_dir(&results, "hosts")),
    );
    for n in [1, 2] {
        assert!(
            out.contains(&format!("Preparing on host {n} of 2: 127.0.0.1:3306"))
                && out.contains(&format!("Cleaning up on host {n} of 2: 127.0.0.1:3306")),
            "{out}"
        );
    }
    // Prepare made `who` and `scratch` on both; cleanup dropped `scratch` on both; each
    // shard's rows come from its own login only, over its two connections.
    assert_eq!(a.0, ["who"], "{a:?}");
    assert_eq!(b.0, ["who"], "{b:?}");
    assert_eq!(a.1.len(), 1, "{a:?}");
    assert_eq!((a.1[0].0.as_str(), a.1[0].1), ("sbsuite_u1@%", 2), "{a:?}");
    assert_eq!(b.1.len(), 1, "{b:?}");
    assert_eq!((b.1[0].0.as_str(), b.1[0].1), ("sbsuite_u2@%", 2), "{b:?}");
}

/// A multi-client step logs in as one process would (#27): each agent gets the per-host
/// logins, and its workers start on the host their thread ids would have in one process. The
/// table exists beforehand (`dataset = "existing"`) with a trigger that stamps each inserted
/// row with the login that inserted it: two clients of one thread each, over two hosts with
/// their own logins, insert as `sbsuite_u1` and `sbsuite_u2`.
#[test]
fn per_host_logins_reach_the_agents_of_clients() {
    const DB: &str = "sbsuite_t_hosts_clients";
    if databases(&[DB]).is_none() {
        return;
    }
    let rows: Vec<String> = (1..=10).map(|i| format!("({i}, {i})")).collect();
    root(&[
        format!(
            "CREATE TABLE {DB}.sbtest1 (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL DEFAULT 0, c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', KEY k_1 (k))"
        ),
        format!("INSERT INTO {DB}.sbtest1 (id, k) VALUES {}", rows.join(", ")),
        format!(
            "CREATE TRIGGER {DB}.stamp BEFORE INSERT ON {DB}.sbtest1 FOR EACH ROW SET NEW.c = SUBSTRING_INDEX(USER(), '@', 1)"
        ),
    ])
    .expect("the table and its trigger");
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "[suite]\nname = \"hosts\"\ndataset = \"existing\"\n\n[clients]\nlist = [\"local:2\"]\n\n\
         [target]\ndriver = \"mysql\"\nuser = \"sbsuite_nobody\"\ndatabase = \"{DB}\"\n\
         hosts = [\n  {{ host = \"127.0.0.1:3306\", user = \"sbsuite_u1\", password = \"{{{{ env.HOSTS_T_PW1 }}}}\" }},\n  \
         {{ host = \"127.0.0.1:3306\", user = \"sbsuite_u2\", password = \"{{{{ env.HOSTS_T_PW2 }}}}\" }},\n]\n\n\
         [defaults]\nworkload = \"oltp_insert\"\ntables = 1\ntable_size = 10\nthreads = 2\ntime = 0\nevents = 200\n"
    );
    let file = dir.path().join("hosts.toml");
    std::fs::write(&file, text).unwrap();
    let results = dir.path().join("results");
    let (code, out, err) = run_with_passwords(file.to_str().unwrap(), &results);
    let stamped = root(&[format!(
        "SELECT c, COUNT(*) FROM {DB}.sbtest1 WHERE id > 10 GROUP BY c ORDER BY c"
    )])
    .unwrap();
    drop_databases(&[DB]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("Running on 2 clients"), "{out}");
    assert_no_password("run's stdout and stderr", &(out + &err));
    assert_no_password(
        "the run directory (with the agents' logs)",
        &all_files_text(&run_dir(&results, "hosts")),
    );
    let users: Vec<&str> = stamped.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(users, ["sbsuite_u1", "sbsuite_u2"], "{stamped:?}");
    let total: u64 = stamped.iter().map(|r| r[1].parse::<u64>().unwrap()).sum();
    assert_eq!(total, 200, "{stamped:?}");
}

/// `sbsuite plan` of a suite whose `[target]` is `target`: exit code 2 and its stderr.
fn rejected(target: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = suite(dir.path(), target);
    let (code, out, err) = sbsuite_with_passwords(&["plan", file.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{target}: {out}{err}");
    assert!(out.is_empty(), "{out}");
    err
}

#[test]
fn bad_hosts_entries_are_refused_with_file_line_and_key() {
    // Line 8 of the suite file is the first `hosts` entry, line 9 the second.
    let hosts =
        |first: &str, second: &str| format!("user = \"u\"\nhosts = [\n  {first},\n  {second},\n]");
    let ok = "\"127.0.0.1:3306\"";
    let cases = [
        (
            hosts(ok, "{ host = \"127.0.0.1\", pasword = \"x\" }"),
            "hosts.toml:9:",
            "unknown key `pasword`",
        ),
        (
            hosts(ok, "{ host = \"127.0.0.1\", port = 70000 }"),
            "hosts.toml:9:",
            "hosts[1].port = 70000 is not a TCP port",
        ),
        (
            hosts("{ host = \"\", user = \"a\" }", ok),
            "hosts.toml:8:",
            "hosts[0].host is empty",
        ),
        (
            hosts(ok, "{ user = \"a\" }"),
            "hosts.toml:9:",
            "missing key `host`",
        ),
        (
            hosts(ok, "{ host = \"h\", password = \"{{ env.X \" }"),
            "hosts.toml:9:",
            "invalid password template",
        ),
        (
            hosts(
                ok,
                "{ host = \"h\", password = \"{{ env.HOSTS_T_UNSET }}\" }",
            ),
            "hosts.toml:9:",
            "HOSTS_T_UNSET",
        ),
        (hosts(ok, "7"), "hosts.toml:9:", "\"host:port\" or a table"),
        (
            format!("prepare_on = \"all\"\n{}", hosts(ok, ok)),
            "hosts.toml:6:",
            "prepare_on",
        ),
    ];
    for (target, place, message) in cases {
        let err = rejected(&target);
        assert!(err.contains(place), "{target}: wants {place}: {err}");
        assert!(err.contains(message), "{target}: wants {message}: {err}");
    }
    // Agents of [clients] get every host's login (#27): such a suite is planned, not refused.
    let dir = tempfile::tempdir().unwrap();
    let file = suite(
        dir.path(),
        &format!(
            "{}\n\n[clients]\nlist = [\"local:2\"]",
            hosts(ok, "{ host = \"h\", user = \"a\" }")
        ),
    );
    let (code, out, err) = sbsuite_with_passwords(&["plan", file.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("Clients: local:2"), "{out}");
    // The line an error shows may hold an entry's literal password: it is not repeated.
    let err = rejected(&hosts(
        ok,
        "{ host = \"h\", password = \"lit-pw-4711\", prot = 1 }",
    ));
    assert!(
        err.contains("hosts.toml:9:") && err.contains("unknown key `prot`"),
        "{err}"
    );
    assert!(
        !err.contains("lit-pw-4711") && err.contains("password = \"***\""),
        "{err}"
    );
}

const ROLES: [&str; 2] = ["sbsuite_h1", "sbsuite_h2"];

/// Runs `sql` as `postgres` in database `db` and returns the rows of the last statement as
/// text; `None` when the server is unreachable.
fn postgres(db: &str, sql: &[String]) -> Option<Vec<Vec<String>>> {
    common::server_lock::share();
    rt().block_on(async {
        let client = pg_client(db).await?;
        let mut rows = Vec::new();
        for s in sql {
            let msgs = client
                .simple_query(s)
                .await
                .unwrap_or_else(|e| panic!("{s}: {e:?}"));
            rows = msgs
                .iter()
                .filter_map(|m| match m {
                    tokio_postgres::SimpleQueryMessage::Row(r) => Some(
                        (0..r.len())
                            .map(|i| r.get(i).unwrap_or("NULL").to_string())
                            .collect(),
                    ),
                    _ => None,
                })
                .collect();
        }
        Some(rows)
    })
}

/// Fresh databases `(name, owner)` for one PostgreSQL test, with the two roles in place;
/// `None` (after saying why) without a server.
fn pg_databases(dbs: &[(&str, &str)]) -> Option<()> {
    let mut sql = Vec::new();
    if std::env::var_os("CI").is_none() {
        for (role, pw) in ROLES.iter().zip(PW) {
            sql.push(format!(
                "DO $$BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') THEN CREATE ROLE {role} LOGIN; END IF; END$$"
            ));
            sql.push(format!("ALTER ROLE {role} LOGIN PASSWORD '{pw}'"));
        }
    }
    for (db, owner) in dbs {
        sql.push(format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"));
        sql.push(format!("CREATE DATABASE {db} OWNER {owner}"));
    }
    if postgres("postgres", &sql).is_none() {
        common::skip("no PostgreSQL server accepts postgres@127.0.0.1:5432 (.ci/run starts one)");
        return None;
    }
    Some(())
}

fn pg_drop(dbs: &[&str]) {
    let sql: Vec<String> = dbs
        .iter()
        .map(|db| format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
        .collect();
    postgres("postgres", &sql);
}

/// `(login, distinct connections, rows)` of table `who` in PostgreSQL database `db`.
fn pg_logins(db: &str) -> Vec<(String, u64, u64)> {
    postgres(
        db,
        &[
            "SELECT login, COUNT(DISTINCT conn), COUNT(*) FROM who GROUP BY login ORDER BY login"
                .to_string(),
        ],
    )
    .unwrap()
    .into_iter()
    .map(|r| (r[0].clone(), r[1].parse().unwrap(), r[2].parse().unwrap()))
    .collect()
}

fn pg_tables(db: &str) -> Vec<String> {
    postgres(
        db,
        &[
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename"
                .to_string(),
        ],
    )
    .unwrap()
    .into_iter()
    .map(|r| r[0].clone())
    .collect()
}

#[test]
fn pgsql_host_entries_log_in_with_their_own_roles() {
    const DB: &str = "sbsuite_t_hosts_pg_login";
    if pg_databases(&[(DB, ROLES[0])]).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = suite(
        dir.path(),
        &format!(
            "user = \"sbsuite_nobody\"\ndatabase = \"{DB}\"\nhosts = [\n  {{ host = \"127.0.0.1:5432\", user = \"sbsuite_h1\", password = \"{{{{ env.HOSTS_T_PW1 }}}}\" }},\n  {{ host = \"127.0.0.1\", port = 5432, user = \"sbsuite_h2\", password = \"{{{{ env.HOSTS_T_PW2 }}}}\" }},\n]"
        ),
    );
    let file = file.to_str().unwrap();
    let (code, out, err) = sbsuite_with_passwords(&["plan", file]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_no_password("plan", &(out + &err));
    let results = dir.path().join("results");
    let (code, out, err) = run_with_passwords(file, &results);
    let seen = if code == Some(0) {
        pg_logins(DB)
    } else {
        Vec::new()
    };
    pg_drop(&[DB]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_no_password("run's stdout and stderr", &(out + &err));
    assert_no_password(
        "the run directory",
        &all_files_text(&run_dir(&results, "hosts")),
    );
    let users: Vec<&str> = seen.iter().map(|(l, _, _)| l.as_str()).collect();
    assert_eq!(users, ROLES, "{seen:?}");
    for (login, conns, rows) in &seen {
        assert_eq!(*conns, 2, "{login}: {seen:?}");
        assert!(*rows > 0, "{login}: {seen:?}");
    }
    assert_eq!(seen.iter().map(|(_, _, r)| r).sum::<u64>(), 400, "{seen:?}");
}

#[test]
fn pgsql_prepare_on_each_prepares_and_cleans_up_every_host() {
    const DBS: [&str; 2] = ["sbsuite_t_hosts_pg_each_a", "sbsuite_t_hosts_pg_each_b"];
    if pg_databases(&[(DBS[0], ROLES[0]), (DBS[1], ROLES[1])]).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = suite(
        dir.path(),
        &format!(
            "prepare_on = \"each\"\nhosts = [\n  {{ host = \"127.0.0.1:5432\", user = \"sbsuite_h1\", password = \"{{{{ env.HOSTS_T_PW1 }}}}\", database = \"{}\" }},\n  {{ host = \"127.0.0.1:5432\", user = \"sbsuite_h2\", password = \"{{{{ env.HOSTS_T_PW2 }}}}\", database = \"{}\" }},\n]",
            DBS[0], DBS[1]
        ),
    );
    let results = dir.path().join("results");
    let (code, out, err) = run_with_passwords(file.to_str().unwrap(), &results);
    let (a, b) = if code == Some(0) {
        (
            (pg_tables(DBS[0]), pg_logins(DBS[0])),
            (pg_tables(DBS[1]), pg_logins(DBS[1])),
        )
    } else {
        Default::default()
    };
    pg_drop(&DBS);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_no_password("run's output", &(out + &err));
    assert_eq!(a.0, ["who"], "{a:?}");
    assert_eq!(b.0, ["who"], "{b:?}");
    assert_eq!(a.1.len(), 1, "{a:?}");
    assert_eq!((a.1[0].0.as_str(), a.1[0].1), (ROLES[0], 2), "{a:?}");
    assert_eq!(b.1.len(), 1, "{b:?}");
    assert_eq!((b.1[0].0.as_str(), b.1[0].1), (ROLES[1], 2), "{b:?}");
}
