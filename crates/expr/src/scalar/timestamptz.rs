//! The functions that read a time zone (RisingWave's `timestamptz.rs` and its zone-taking overloads): the
//! front end's session-time-zone rewrite gives each zone-dependent call its session's zone as a last
//! argument, so a streaming job keeps the zone of the session that created it. Zones come from the IANA
//! database (chrono-tz), named in any case.

use chrono::{DateTime, NaiveDateTime, Offset};
use chrono_tz::Tz;
use epochlab_common::types::{Interval, Timestamptz};

use super::datetime::ts_add;
use crate::error::{ExprError, Result};

/// The zone `name` names, in any case (RisingWave's `Timestamptz::lookup_time_zone`): its exact name is a
/// hash lookup (the session-time-zone rewrite gives calls the canonical name), another case a scan.
pub fn lookup_time_zone(name: &str) -> Result<Tz> {
    name.parse::<Tz>()
        .ok()
        .or_else(|| {
            chrono_tz::TZ_VARIANTS
                .iter()
                .find(|tz| tz.name().eq_ignore_ascii_case(name))
                .copied()
        })
        .ok_or_else(|| {
            ExprError::invalid_param("time_zone", format!("'{name}' is not a valid timezone"))
        })
}

/// The instant as a wall-clock time in `zone`.
pub fn in_zone(t: Timestamptz, zone: Tz) -> Result<DateTime<Tz>> {
    DateTime::from_timestamp_micros(t.timestamp_micros())
        .map(|utc| utc.with_timezone(&zone))
        .ok_or(ExprError::NumericOutOfRange)
}

/// `timestamp AT TIME ZONE zone`: the instant the wall-clock time is in the zone. A time the zone skips
/// (daylight saving forward) is an error; a time it repeats is read with the offset after the change, as
/// PostgreSQL does.
pub fn timestamp_at_time_zone(t: NaiveDateTime, zone: &str) -> Result<Timestamptz> {
    let tz = lookup_time_zone(zone)?;
    let instant = t.and_local_timezone(tz).latest().ok_or_else(|| {
        ExprError::invalid_param(
            "local timestamp",
            format!(
                "fail to interpret local timestamp \"{}\" in time zone \"{}\"",
                t,
                tz.name()
            ),
        )
    })?;
    Ok(Timestamptz::from_micros(instant.timestamp_micros()))
}

/// `timestamptz AT TIME ZONE zone`: the wall-clock time of the instant in the zone.
pub fn timestamptz_at_time_zone(t: Timestamptz, zone: &str) -> Result<NaiveDateTime> {
    Ok(in_zone(t, lookup_time_zone(zone)?)?.naive_local())
}

/// The text of an instant in `zone` (what a session in that zone prints): `2022-01-01 00:00:00-08:00`,
/// fractional seconds in 3, 6 or 9 digits when there are any, the offset in hours and minutes.
pub fn to_text_in_zone(t: Timestamptz, zone: Tz) -> Result<String> {
    Ok(in_zone(t, zone)?
        .format("%Y-%m-%d %H:%M:%S%.f%:z")
        .to_string())
}

/// `cast_with_time_zone(text, zone)`: a text with an offset is that instant; without one, a wall-clock
/// time in the zone.
pub fn str_to_timestamptz(s: &str, zone: &str) -> Result<Timestamptz> {
    use epochlab_common::types::parse_timestamptz_parts;
    let (local, offset) =
        parse_timestamptz_parts(s.trim()).ok_or_else(|| ExprError::Parse(parse_error(s).into()))?;
    match offset {
        Some(secs) => local
            .and_utc()
            .timestamp_micros()
            .checked_sub(i64::from(secs) * 1_000_000)
            .map(Timestamptz::from_micros)
            .ok_or(ExprError::NumericOutOfRange),
        None => timestamp_at_time_zone(local, zone),
    }
}

fn parse_error(s: &str) -> String {
    format!(
        "Can't cast string to timestamp with time zone (expected format is YYYY-MM-DD HH:MM:SS[.D+{{up to 6 digits}}] followed by +hh:mm or literal Z)\nFor example: '2021-04-01 00:00:00+00:00': {s}"
    )
}

/// `add_with_time_zone(t, i, zone)`: the interval's months and days move the wall-clock time in the zone
/// (a day across a daylight-saving change is 23 or 25 hours), its microseconds move the instant.
pub fn add_with_time_zone(t: Timestamptz, i: Interval, zone: &str) -> Result<Timestamptz> {
    let mut t = t;
    if i.months() != 0 || i.days() != 0 {
        let calendar = Interval::from_month_day_usec(i.months(), i.days(), 0);
        let local = ts_add(timestamptz_at_time_zone(t, zone)?, calendar)?;
        t = timestamp_at_time_zone(local, zone)?;
    }
    t.timestamp_micros()
        .checked_add(i.usecs())
        .map(Timestamptz::from_micros)
        .ok_or(ExprError::NumericOutOfRange)
}

/// `subtract_with_time_zone(t, i, zone)`: adding the negated interval.
pub fn subtract_with_time_zone(t: Timestamptz, i: Interval, zone: &str) -> Result<Timestamptz> {
    let neg = Interval::from_month_day_usec(
        i.months()
            .checked_neg()
            .ok_or(ExprError::NumericOutOfRange)?,
        i.days().checked_neg().ok_or(ExprError::NumericOutOfRange)?,
        i.usecs()
            .checked_neg()
            .ok_or(ExprError::NumericOutOfRange)?,
    );
    add_with_time_zone(t, neg, zone)
}

/// The zone's offset east of UTC at the instant, in seconds.
pub fn offset_secs(t: Timestamptz, zone: &str) -> Result<i32> {
    Ok(in_zone(t, lookup_time_zone(zone)?)?
        .offset()
        .fix()
        .local_minus_utc())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tz(s: &str) -> Timestamptz {
        str_to_timestamptz(s, "UTC").unwrap()
    }

    fn local(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S").unwrap()
    }

    #[test]
    fn zones_are_found_in_any_case() {
        assert_eq!(lookup_time_zone("us/pacific").unwrap(), Tz::US__Pacific);
        assert_eq!(lookup_time_zone("EST5EDT").unwrap(), Tz::EST5EDT);
        assert!(lookup_time_zone("Mars/Olympus").is_err());
    }

    #[test]
    fn wall_clock_times_round_trip_through_a_zone() {
        // Winter and summer, either side of PST -> PDT and of CEST -> CET.
        for (instant, zone, wall) in [
            ("2022-01-01 00:00:00Z", "US/Pacific", "2021-12-31 16:00:00"),
            ("2022-07-01 00:00:00Z", "US/Pacific", "2022-06-30 17:00:00"),
            ("2022-03-13 10:00:00Z", "US/Pacific", "2022-03-13 03:00:00"),
            (
                "2022-10-30 02:00:00Z",
                "europe/zurich",
                "2022-10-30 03:00:00",
            ),
        ] {
            assert_eq!(
                timestamptz_at_time_zone(tz(instant), zone).unwrap(),
                local(wall)
            );
            assert_eq!(
                timestamp_at_time_zone(local(wall), zone).unwrap(),
                tz(instant)
            );
        }
    }

    #[test]
    fn a_skipped_time_is_an_error_and_a_repeated_one_takes_the_later_offset() {
        assert!(timestamp_at_time_zone(local("2022-03-13 02:30:00"), "US/Pacific").is_err());
        let repeated = timestamp_at_time_zone(local("2022-11-06 01:30:00"), "US/Pacific").unwrap();
        assert_eq!(repeated, tz("2022-11-06 09:30:00Z"));
    }

    #[test]
    fn days_move_the_wall_clock_and_hours_the_instant() {
        let t = str_to_timestamptz("2016-10-29 12:00:00", "europe/london").unwrap();
        let day = Interval::from_month_day_usec(0, 1, 0);
        let hours = Interval::from_month_day_usec(0, 0, 24 * 3_600_000_000);
        let a = add_with_time_zone(t, hours, "europe/london").unwrap();
        let a = add_with_time_zone(a, day, "europe/london").unwrap();
        assert_eq!(
            to_text_in_zone(a, Tz::Europe__London).unwrap(),
            "2016-10-31 11:00:00+00:00"
        );
        let both = Interval::from_month_day_usec(0, 1, 24 * 3_600_000_000);
        let b = add_with_time_zone(t, both, "europe/london").unwrap();
        assert_eq!(
            to_text_in_zone(b, Tz::Europe__London).unwrap(),
            "2016-10-31 12:00:00+00:00"
        );
    }

    #[test]
    fn text_in_a_zone_shows_its_offset_and_only_the_fraction_there_is() {
        let t = tz("1973-07-15 12:15:55.33Z");
        let ny = lookup_time_zone("America/New_York").unwrap();
        assert_eq!(
            to_text_in_zone(t, ny).unwrap(),
            "1973-07-15 08:15:55.330-04:00"
        );
        assert_eq!(
            to_text_in_zone(tz("2022-01-01 08:00:00Z"), Tz::US__Pacific).unwrap(),
            "2022-01-01 00:00:00-08:00"
        );
    }
}
