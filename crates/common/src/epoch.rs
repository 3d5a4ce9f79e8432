//! Epochs as RisingWave encodes them: physical milliseconds since 2021-04-01T00:00:00Z, shifted left by 16
//! bits; the low 16 bits are reserved (RisingWave uses them for mem-table spill offsets).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::clock::Clock;

/// 2021-04-01T00:00:00Z in Unix milliseconds: the origin of RisingWave's physical epoch time.
pub const UNIX_RISINGWAVE_DATE_MS: u64 = 1_617_235_200_000;
pub const EPOCH_PHYSICAL_SHIFT_BITS: u32 = 16;
pub const EPOCH_SPILL_TIME_MASK: u64 = (1 << EPOCH_PHYSICAL_SHIFT_BITS) - 1;
pub const INVALID_EPOCH: u64 = 0;
pub const MAX_EPOCH: u64 = !EPOCH_SPILL_TIME_MASK;

#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Epoch(pub u64);

impl Epoch {
    pub const INVALID: Epoch = Epoch(INVALID_EPOCH);
    pub const MAX: Epoch = Epoch(MAX_EPOCH);

    pub fn from_physical_time(physical_ms: u64) -> Self {
        Epoch(physical_ms << EPOCH_PHYSICAL_SHIFT_BITS)
    }

    /// The epoch for "now" on `clock`.
    pub fn now(clock: &Clock) -> Self {
        Self::from_physical_time(Self::physical_now(clock))
    }

    fn physical_now(clock: &Clock) -> u64 {
        clock
            .now_unix_ms()
            .checked_sub(UNIX_RISINGWAVE_DATE_MS)
            .expect("clock is before 2021-04-01")
    }

    /// Milliseconds since 2021-04-01T00:00:00Z.
    pub fn physical_time(self) -> u64 {
        self.0 >> EPOCH_PHYSICAL_SHIFT_BITS
    }

    /// The physical time as Unix milliseconds.
    pub fn as_unix_millis(self) -> u64 {
        UNIX_RISINGWAVE_DATE_MS + self.physical_time()
    }

    /// The next epoch: the clock's current physical time, or one millisecond past `self` if the clock has
    /// not moved past it. RisingWave busy-waits for the clock here; a simulation must not spin on virtual
    /// time, so the millisecond is taken instead. Strictly increasing either way.
    pub fn next(self, clock: &Clock) -> Self {
        let physical = Self::physical_now(clock).max(self.physical_time() + 1);
        let next = Self::from_physical_time(physical);
        assert!(next > self, "epoch must increase: {next} <= {self}");
        next
    }

    pub fn is_invalid(self) -> bool {
        self.0 == INVALID_EPOCH
    }

    /// A test epoch from a physical time in milliseconds, like RisingWave's `test_epoch`.
    pub fn test(physical_ms: u64) -> Self {
        Self::from_physical_time(physical_ms)
    }
}

impl fmt::Display for Epoch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Debug for Epoch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The epoch pair every executor sees on a barrier: data after the barrier belongs to `curr`; a state table
/// commits `prev` and moves its write epoch to `curr`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct EpochPair {
    pub curr: Epoch,
    pub prev: Epoch,
}

impl EpochPair {
    /// Panics unless `curr > prev`: a pair the other way round is a bug in whoever made it.
    pub fn new(curr: Epoch, prev: Epoch) -> Self {
        assert!(
            curr > prev,
            "EpochPair needs curr > prev, got curr={curr} prev={prev}"
        );
        Self { curr, prev }
    }

    /// The pair that starts a table from nothing: `prev` is the invalid epoch.
    pub fn new_test_epoch(curr: Epoch) -> Self {
        Self::new(curr, Epoch::INVALID)
    }
}

impl fmt::Debug for EpochPair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "EpochPair {{ curr: {}, prev: {} }}",
            self.curr, self.prev
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_matches_risingwave() {
        // 2024-02-01T00:00:00Z is 1036 days after 2021-04-01.
        let clock = Clock::manual(crate::clock::DEFAULT_ORIGIN_UNIX_MS);
        let e = Epoch::now(&clock);
        assert_eq!(e.physical_time(), 1036 * 86_400_000);
        assert_eq!(e.0, (1036 * 86_400_000) << 16);
        assert_eq!(e.0 & EPOCH_SPILL_TIME_MASK, 0);
        assert_eq!(e.as_unix_millis(), crate::clock::DEFAULT_ORIGIN_UNIX_MS);
        // The epochs of the original failure log decode to 2022-09-24 (RisingWave's own clock then).
        let logged = Epoch(3_066_966_724_575_232);
        assert_eq!(logged.0 & EPOCH_SPILL_TIME_MASK, 0);
        assert_eq!(logged.as_unix_millis() / 86_400_000, 19_259); // days since 1970: 2022-09-24
    }

    #[test]
    fn next_is_strictly_increasing_even_when_the_clock_stands_still() {
        let clock = Clock::manual(crate::clock::DEFAULT_ORIGIN_UNIX_MS);
        let e0 = Epoch::now(&clock);
        let e1 = e0.next(&clock);
        let e2 = e1.next(&clock);
        assert!(e0 < e1 && e1 < e2);
        assert_eq!(e1.physical_time(), e0.physical_time() + 1);
        clock.advance_ms(1000);
        let e3 = e2.next(&clock);
        assert_eq!(e3.physical_time(), e0.physical_time() + 1000);
        assert!(e3.0 - e2.0 >= 1 << 16);
    }

    #[test]
    #[should_panic(expected = "curr > prev")]
    fn epoch_pair_rejects_backwards() {
        EpochPair::new(Epoch::test(1), Epoch::test(2));
    }
}
