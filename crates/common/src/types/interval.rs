//! `interval`: months, days and microseconds kept apart, as PostgreSQL and RisingWave do. Equality, order
//! and hash are by the total as if a month were 30 days and a day 24 hours, so `1 mon` = `30 days`.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Serialize};

pub const USECS_PER_SEC: i64 = 1_000_000;
pub const USECS_PER_DAY: i64 = 86_400 * USECS_PER_SEC;
pub const USECS_PER_MONTH: i64 = 30 * USECS_PER_DAY;

/// RisingWave's interval. `Debug` prints the three fields.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, Default)]
pub struct Interval {
    months: i32,
    days: i32,
    usecs: i64,
}

impl Interval {
    pub const fn from_month_day_usec(months: i32, days: i32, usecs: i64) -> Self {
        Self {
            months,
            days,
            usecs,
        }
    }

    pub const fn months(&self) -> i32 {
        self.months
    }

    pub const fn days(&self) -> i32 {
        self.days
    }

    pub const fn usecs(&self) -> i64 {
        self.usecs
    }

    /// The normalised total in microseconds: what equality, order and hash use.
    pub const fn total_usecs(&self) -> i128 {
        self.months as i128 * USECS_PER_MONTH as i128
            + self.days as i128 * USECS_PER_DAY as i128
            + self.usecs as i128
    }

    /// An interval with the given total: as many whole months as fit, then days, then microseconds (each
    /// part carries the sign of the total). Every total of a valid interval has one; `None` otherwise.
    pub fn from_total_usecs(total: i128) -> Option<Self> {
        let clamp32 = |v: i128| v.clamp(i32::MIN as i128, i32::MAX as i128);
        let months = clamp32(total / USECS_PER_MONTH as i128);
        let rest = total - months * USECS_PER_MONTH as i128;
        let days = clamp32(rest / USECS_PER_DAY as i128);
        let usecs = i64::try_from(rest - days * USECS_PER_DAY as i128).ok()?;
        Some(Self::from_month_day_usec(months as i32, days as i32, usecs))
    }
}

impl PartialEq for Interval {
    fn eq(&self, other: &Self) -> bool {
        self.total_usecs() == other.total_usecs()
    }
}

impl Eq for Interval {}

impl PartialOrd for Interval {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Interval {
    fn cmp(&self, other: &Self) -> Ordering {
        self.total_usecs().cmp(&other.total_usecs())
    }
}

impl Hash for Interval {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.total_usecs().hash(state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalised_equality_and_order() {
        let mon = Interval::from_month_day_usec(1, 0, 0);
        assert_eq!(mon, Interval::from_month_day_usec(0, 30, 0));
        assert_eq!(mon, Interval::from_month_day_usec(0, 0, 30 * USECS_PER_DAY));
        assert!(Interval::from_month_day_usec(0, 31, 0) > mon);
        assert!(Interval::from_month_day_usec(0, 0, -1) < Interval::default());
    }

    #[test]
    fn every_total_has_an_interval() {
        let extremes = [
            Interval::from_month_day_usec(i32::MAX, i32::MAX, i64::MAX),
            Interval::from_month_day_usec(i32::MIN, i32::MIN, i64::MIN),
            Interval::from_month_day_usec(i32::MAX, i32::MIN, i64::MIN),
            Interval::from_month_day_usec(-1, 45, -7),
        ];
        for i in extremes {
            assert_eq!(
                Interval::from_total_usecs(i.total_usecs()),
                Some(i),
                "{i:?}"
            );
        }
    }
}
