//! TODO(runner branch)
pub fn command(_args: crate::cli::RunArgs) -> u8 {
    2
}
