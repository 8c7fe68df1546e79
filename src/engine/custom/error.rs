//! [`ValueError`]: why an expression of a custom workload could not be compiled or evaluated,
//! or a generator could not be built or could not draw. The suite's loader turns it into a
//! [`crate::source::ConfigError`] at the key that wrote it; a run turns it into a failed
//! event or step. Every message names the expression or generator and says why.

/// Why an expression or generator of a custom workload has no value.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ValueError {
    /// minijinja could not parse the expression.
    #[error("`{expr}` is not a valid expression: {detail}")]
    Syntax { expr: String, detail: String },
    /// The expression reads a variable that is not defined where it is written.
    #[error("`{expr}` uses `{name}`, which is not defined here (known: {known})")]
    Unknown {
        expr: String,
        name: String,
        /// The names that are defined, comma-separated (`none` when there are none).
        known: String,
    },
    /// `x / 0`, `x % 0`: an error whatever the data.
    #[error("`{expr}` divides by zero ({at}) whatever the values it reads")]
    DividesByZero { expr: String, at: String },
    /// Evaluating the expression failed (minijinja's error kind and detail).
    #[error("`{expr}` failed: {detail}")]
    Eval { expr: String, detail: String },
    #[error("`{expr}` is {value}, not a finite number")]
    NotFinite { expr: String, value: String },
    #[error("`{expr}` is {value}, not an integer")]
    NotInteger { expr: String, value: String },
    /// A whole number past i64 (minijinja computes in i128).
    #[error("`{expr}` is {value}, too large for a 64-bit integer")]
    TooLarge { expr: String, value: String },
    #[error("`nurand` needs A >= 0 (TPC-C uses 255, 1023, 8191), not {0}")]
    NurandA(i64),
    #[error("`choice` needs at least one value")]
    NoChoice,
    #[error("`weights` has {weights} entries for {values} values")]
    Weights { weights: usize, values: usize },
    #[error("every weight of `choice` is 0")]
    ZeroWeights,
    #[error("`scale` is {scale}: use at most {max} decimals (what a double holds)")]
    Scale { scale: u32, max: u32 },
    #[error("`words` needs 10 words (one per digit), not {0}")]
    Words(usize),
    #[error("`fk` names `{0}`, which this workload does not load")]
    UnknownTable(String),
    #[error("a string length of {len} is over the limit of {max} characters")]
    TooLong { len: i64, max: i64 },
    #[error(
        "`float` range [{lo}, {hi}] with {scale} decimals needs more digits than a double holds: use a smaller scale or range"
    )]
    FloatPrecision { lo: f64, hi: f64, scale: u32 },
    #[error("`float` range [{lo}, {hi}] holds no number with {scale} decimals")]
    FloatEmpty { lo: f64, hi: f64, scale: u32 },
    #[error(
        "the sequence starting at {start} is exhausted (it passed {})",
        i64::MAX
    )]
    Exhausted { start: i64 },
    /// The distribution's options (`rand_type`, `rand_zipfian_exp`, …) are not valid.
    #[error("{0}")]
    Distribution(String),
}
