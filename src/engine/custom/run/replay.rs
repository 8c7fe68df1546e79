//! `retry = "same"` (#31): a transaction re-run after an ignored error binds the values of
//! its first try. Every value its params and `let`s draw on the first try is recorded, in
//! order; a re-run takes them back in the same order instead of drawing. Replaying values
//! (not the generator state) makes every generator repeat, global sequences and `date`
//! included. A re-run that draws more than the first try did (a `repeat` whose count comes
//! from a capture that changed) draws fresh values for the rest, and records them.

use crate::engine::custom::model::Val;

/// A worker's record of the values drawn by the transaction under way.
#[derive(Debug, Default)]
pub(super) struct Replay {
    /// Recording or replaying (a `retry = "same"` transaction); off: every draw is fresh.
    on: bool,
    values: Vec<Val>,
    /// The next value a re-run takes.
    next: usize,
}

impl Replay {
    /// A new transaction begins: recording when it is `retry = "same"`.
    pub(super) fn begin(&mut self, same: bool) {
        self.on = same;
        self.values.clear();
        self.next = 0;
    }

    /// The transaction re-runs: its draws are taken from the record from the start.
    pub(super) fn rewind(&mut self) {
        self.next = 0;
    }

    /// The value of the next draw: the recorded one, or `fresh()` (then recorded).
    pub(super) fn draw<E>(&mut self, fresh: impl FnOnce() -> Result<Val, E>) -> Result<Val, E> {
        if !self.on {
            return fresh();
        }
        if let Some(v) = self.values.get(self.next) {
            self.next += 1;
            return Ok(v.clone());
        }
        let v = fresh()?;
        self.values.push(v.clone());
        self.next += 1;
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewound_record_gives_the_same_values_then_fresh_ones() {
        let mut r = Replay::default();
        let mut n = 0;
        let mut fresh = || -> Result<Val, ()> {
            n += 1;
            Ok(Val::Int(n))
        };
        r.begin(true);
        assert_eq!(r.draw(&mut fresh), Ok(Val::Int(1)));
        assert_eq!(r.draw(&mut fresh), Ok(Val::Int(2)));
        r.rewind();
        assert_eq!(r.draw(&mut fresh), Ok(Val::Int(1)));
        assert_eq!(r.draw(&mut fresh), Ok(Val::Int(2)));
        assert_eq!(r.draw(&mut fresh), Ok(Val::Int(3)));
        r.begin(false);
        assert_eq!(r.draw(&mut fresh), Ok(Val::Int(4)));
        r.rewind();
        assert_eq!(r.draw(&mut fresh), Ok(Val::Int(5)));
    }
}
