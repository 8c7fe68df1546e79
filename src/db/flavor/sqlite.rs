//! SQLite, the file database: a busy or locked database is what a concurrent run meets.

use super::{ErrorClass, Flavor, KnownError};
use crate::db::target::Driver;

/// SQLite.
pub struct Sqlite;

const ERRORS: &[KnownError] = &[
    KnownError::new("SQLITE_BUSY", ErrorClass::Timeout, true),
    KnownError::new("SQLITE_LOCKED", ErrorClass::Conflict, true),
    KnownError::new("SQLITE_CONSTRAINT", ErrorClass::Duplicate, false),
];

impl Flavor for Sqlite {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn label(&self) -> &'static str {
        "SQLite"
    }

    fn driver(&self) -> Driver {
        Driver::Sqlite
    }

    fn recognizes(&self, _version: &str) -> bool {
        true
    }

    fn errors(&self) -> &'static [KnownError] {
        ERRORS
    }
}
