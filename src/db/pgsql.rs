//! PostgreSQL connections through `tokio-postgres` (in progress).

use super::{Connection, ErrKind, SqlError, Target};

/// Opens connection number `n` of `t`.
pub fn open(_t: &Target, _n: usize) -> Result<Box<dyn Connection>, SqlError> {
    Err(SqlError::client(
        "driver = \"pgsql\" is not available in this build",
        ErrKind::Other,
    ))
}
