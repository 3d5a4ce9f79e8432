//! `date`, `time`, `timestamp` (chrono's naive types, as RisingWave's wrappers) and `timestamptz`
//! (microseconds since the Unix epoch, UTC). Nothing here reads the wall clock.

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, NaiveTime, Timelike};

/// `date`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Date(pub NaiveDate);

/// `time without time zone`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Time(pub NaiveTime);

/// `timestamp without time zone`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Timestamp(pub NaiveDateTime);

/// `timestamp with time zone`: an instant, microseconds since 1970-01-01 00:00:00 UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Timestamptz(i64);

impl Date {
    /// Days since 0001-01-01 (day 1), chrono's `num_days_from_ce`.
    pub fn days_from_ce(self) -> i32 {
        self.0.num_days_from_ce()
    }

    pub fn from_days_from_ce(days: i32) -> Option<Self> {
        NaiveDate::from_num_days_from_ce_opt(days).map(Date)
    }

    pub fn from_ymd(year: i32, month: u32, day: u32) -> Option<Self> {
        NaiveDate::from_ymd_opt(year, month, day).map(Date)
    }
}

impl Time {
    /// Seconds since midnight and the nanoseconds within the second (over 1e9 for a leap second).
    pub fn secs_nanos(self) -> (u32, u32) {
        (self.0.num_seconds_from_midnight(), self.0.nanosecond())
    }

    pub fn from_secs_nanos(secs: u32, nanos: u32) -> Option<Self> {
        NaiveTime::from_num_seconds_from_midnight_opt(secs, nanos).map(Time)
    }

    pub fn from_hms_micro(h: u32, m: u32, s: u32, micro: u32) -> Option<Self> {
        NaiveTime::from_hms_micro_opt(h, m, s, micro).map(Time)
    }
}

impl Timestamp {
    /// Seconds since the Unix epoch and the nanoseconds within the second.
    pub fn secs_nanos(self) -> (i64, u32) {
        let utc = self.0.and_utc();
        (utc.timestamp(), utc.timestamp_subsec_nanos())
    }

    pub fn from_secs_nanos(secs: i64, nanos: u32) -> Option<Self> {
        DateTime::from_timestamp(secs, nanos).map(|t| Timestamp(t.naive_utc()))
    }

    pub fn new(date: Date, time: Time) -> Self {
        Timestamp(date.0.and_time(time.0))
    }
}

impl Timestamptz {
    pub const fn from_micros(micros: i64) -> Self {
        Self(micros)
    }

    pub const fn timestamp_micros(self) -> i64 {
        self.0
    }

    /// The instant as a UTC wall-clock timestamp, if chrono can represent it.
    pub fn to_utc(self) -> Option<NaiveDateTime> {
        DateTime::from_timestamp_micros(self.0).map(|t| t.naive_utc())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_round_trip() {
        let d = Date::from_ymd(2022, 1, 1).unwrap();
        assert_eq!(Date::from_days_from_ce(d.days_from_ce()), Some(d));
        let t = Time::from_hms_micro(12, 34, 56, 123_000).unwrap();
        let (s, n) = t.secs_nanos();
        assert_eq!(Time::from_secs_nanos(s, n), Some(t));
        let ts = Timestamp::new(d, t);
        let (s, n) = ts.secs_nanos();
        assert_eq!(s, 1_641_040_496);
        assert_eq!(Timestamp::from_secs_nanos(s, n), Some(ts));
        let tz = Timestamptz::from_micros(1_641_040_496_123_000);
        assert_eq!(tz.to_utc(), Some(ts.0));
    }
}
