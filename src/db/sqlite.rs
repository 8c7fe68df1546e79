//! Embedded SQLite through `rusqlite` (in progress).

use super::{Connection, ErrKind, SqlError, Target};

/// Opens a connection to the target's database file.
pub fn open(_t: &Target) -> Result<Box<dyn Connection>, SqlError> {
    Err(SqlError::client(
        "driver = \"sqlite\" is not available in this build",
        ErrKind::Other,
    ))
}
