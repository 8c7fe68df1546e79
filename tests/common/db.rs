//! The tests' own connections to the shared database servers (MariaDB root@127.0.0.1:3306,
//! PostgreSQL postgres@127.0.0.1:5432, seekdb — OceanBase — root@127.0.0.1:2881, as `.ci/run`
//! sets them up): to make and drop their databases and to read what a run did behind
//! sbsuite's back. One copy for every area. The OceanBase tests hold their server through
//! [`oceanbase`] instead.
//!
//! [`admin_my`], [`admin_pg`] (and `_in`) and [`listening`] hold the shared servers for the
//! rest of the calling test ([`server_lock::share`]), so that a test holding them alone never
//! sees this one's statements; call them on the test's own thread. Connections made from
//! [`my_opts`] and [`pg_client`] take nothing: a test that makes only those, or reaches the
//! servers through their command-line clients, calls [`server_lock::share`] itself.

use mysql_async::prelude::Queryable;

use super::server_lock;

/// The shared MariaDB's port on 127.0.0.1.
pub const MARIADB_PORT: u16 = 3306;

/// The shared PostgreSQL's port on 127.0.0.1.
pub const PGSQL_PORT: u16 = 5432;

/// seekdb's port on 127.0.0.1: OceanBase's single-node kernel, as `bench/seekdb.sh` (and
/// `.ci/run`) serve it, root without a password.
pub const OCEANBASE_PORT: u16 = 2881;

/// The OceanBase server for the calling test, held alone until the returned lock drops
/// ([`server_lock::oceanbase_lock`]), when it answers as root on 127.0.0.1:2881 with an
/// OceanBase version; a recorded skip otherwise (a MySQL or MariaDB on that port is not it).
pub fn oceanbase() -> Option<server_lock::OceanBaseLock> {
    let version = rt().block_on(async {
        let mut c = mysql_async::Conn::new(my_opts_at(OCEANBASE_PORT, None))
            .await
            .ok()?;
        let v: Option<String> = c.query_first("SELECT version()").await.ok()?;
        let _ = c.disconnect().await;
        v
    });
    match version {
        Some(v) if v.contains("OceanBase") => Some(server_lock::oceanbase_lock()),
        other => {
            let found = match other {
                Some(v) => format!("127.0.0.1:{OCEANBASE_PORT} is {v}, not OceanBase"),
                None => format!("no server accepts root@127.0.0.1:{OCEANBASE_PORT}"),
            };
            super::skip(&format!(
                "{found}: the OceanBase tests need seekdb there (bench/seekdb.sh start; .ci/run starts it)"
            ));
            None
        }
    }
}

/// A runtime for one blocking call of the async clients.
pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// root@127.0.0.1:3306, in database `db` or none.
pub fn my_opts(db: Option<&str>) -> mysql_async::OptsBuilder {
    my_opts_at(MARIADB_PORT, db)
}

/// [`my_opts`] for the server on `port` (a test's private server).
pub fn my_opts_at(port: u16, db: Option<&str>) -> mysql_async::OptsBuilder {
    mysql_async::OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(port)
        .user(Some("root"))
        .db_name(db)
}

/// postgres@127.0.0.1:5432 in database `db`; `None` when the server is unreachable or
/// refuses.
pub async fn pg_client(db: &str) -> Option<tokio_postgres::Client> {
    pg_client_at(PGSQL_PORT, db).await
}

/// [`pg_client`] for the server on `port` (a test's private server).
pub async fn pg_client_at(port: u16, db: &str) -> Option<tokio_postgres::Client> {
    let mut c = tokio_postgres::Config::new();
    c.host("127.0.0.1")
        .port(port)
        .user("postgres")
        .dbname(db)
        .connect_timeout(std::time::Duration::from_secs(10));
    let (client, conn) = c.connect(tokio_postgres::NoTls).await.ok()?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Some(client)
}

/// Runs `sql` as root on the shared MariaDB, on a fresh connection; `None` when the server is
/// unreachable or refuses a statement.
pub fn admin_my(sql: &[String]) -> Option<()> {
    server_lock::share();
    admin_my_at(MARIADB_PORT, sql)
}

/// [`admin_my`] on the server on `port` (a test's private server: nothing is shared).
pub fn admin_my_at(port: u16, sql: &[String]) -> Option<()> {
    rt().block_on(async {
        let mut c = mysql_async::Conn::new(my_opts_at(port, None)).await.ok()?;
        for s in sql {
            c.query_drop(s).await.ok()?;
        }
        let _ = c.disconnect().await;
        Some(())
    })
}

/// The global value of the shared MariaDB's variable `name`, as text (`SELECT @@GLOBAL.name`
/// through the `mysql` client).
pub fn my_global(name: &str) -> String {
    server_lock::share();
    let out = std::process::Command::new("mysql")
        .args(["-h", "127.0.0.1", "-P", "3306", "-u", "root", "-N", "-e"])
        .arg(format!("SELECT @@GLOBAL.{name}"))
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Sets a global variable of the shared MariaDB back to the value it had at [`RestoreMy::save`]
/// when dropped, also when the test panics: a test whose variants change the server restores
/// it on its own, without relying on the product it tests.
pub struct RestoreMy(&'static str, String);

impl RestoreMy {
    pub fn save(name: &'static str) -> RestoreMy {
        RestoreMy(name, my_global(name))
    }

    /// The value saved.
    pub fn original(&self) -> &str {
        &self.1
    }
}

impl Drop for RestoreMy {
    fn drop(&mut self) {
        admin_my(&[format!("SET GLOBAL {} = {}", self.0, self.1)]);
    }
}

/// Runs `sql` as postgres in database `db` of the shared PostgreSQL, on a fresh connection;
/// `None` when the server is unreachable or refuses a statement.
pub fn admin_pg_in(db: &str, sql: &[String]) -> Option<()> {
    server_lock::share();
    rt().block_on(async {
        let c = pg_client(db).await?;
        for s in sql {
            c.batch_execute(s).await.ok()?;
        }
        Some(())
    })
}

/// [`admin_pg_in`] the database `postgres` (to make and drop databases).
pub fn admin_pg(sql: &[String]) -> Option<()> {
    admin_pg_in("postgres", sql)
}

/// Whether a server listens on `addr` (`127.0.0.1:3306`); a recorded skip naming `what`
/// otherwise. For the tests that reach a server through the library or sbsuite alone.
pub fn listening(addr: &str, what: &str) -> bool {
    server_lock::share();
    let up = addr.parse().is_ok_and(|a| {
        std::net::TcpStream::connect_timeout(&a, std::time::Duration::from_secs(2)).is_ok()
    });
    if !up {
        super::skip(&format!("no {what} server listens on {addr}"));
    }
    up
}
