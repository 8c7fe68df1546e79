//! Command-line definitions (clap only lives here).
