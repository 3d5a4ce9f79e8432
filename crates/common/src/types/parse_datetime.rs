//! Dates, times and timestamps from text, in the forms RisingWave reads (RFC 3339 and PostgreSQL's
//! common ones): `2022-01-01`, `12:34`, `12:34:56.123456`, `2022-01-01 12:34:56`, `2022-01-01T12:34:56`,
//! and for timestamptz an offset `Z`, `+08`, `+0800`, `+08:00`, possibly after a space.

use chrono::{NaiveDate, NaiveDateTime, NaiveTime};

/// A byte cursor over the text being parsed.
struct Cursor<'a> {
    s: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn new(s: &'a str) -> Self {
        Self {
            s: s.as_bytes(),
            pos: 0,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.peek() == Some(c);
        self.pos += usize::from(hit);
        hit
    }

    /// Exactly `n` ASCII digits.
    fn digits(&mut self, n: usize) -> Option<u32> {
        let bytes = self.s.get(self.pos..self.pos + n)?;
        if !bytes.iter().all(u8::is_ascii_digit) {
            return None;
        }
        self.pos += n;
        Some(
            bytes
                .iter()
                .fold(0, |acc, b| acc * 10 + u32::from(b - b'0')),
        )
    }

    fn at_end(&self) -> bool {
        self.pos == self.s.len()
    }
}

fn date(c: &mut Cursor<'_>) -> Option<NaiveDate> {
    let year = c.digits(4)?;
    c.eat(b'-').then_some(())?;
    let month = c.digits(2)?;
    c.eat(b'-').then_some(())?;
    let day = c.digits(2)?;
    NaiveDate::from_ymd_opt(year as i32, month, day)
}

/// `HH:MM`, `HH:MM:SS`, `HH:MM:SS.f` with one to six digits of fraction.
fn time(c: &mut Cursor<'_>) -> Option<NaiveTime> {
    let hour = c.digits(2)?;
    c.eat(b':').then_some(())?;
    let minute = c.digits(2)?;
    let (mut second, mut micro) = (0, 0);
    if c.eat(b':') {
        second = c.digits(2)?;
        if c.eat(b'.') {
            micro = fraction_micros(c)?;
        }
    }
    NaiveTime::from_hms_micro_opt(hour, minute, second, micro)
}

fn fraction_micros(c: &mut Cursor<'_>) -> Option<u32> {
    let start = c.pos;
    while c.peek().is_some_and(|b| b.is_ascii_digit()) {
        c.pos += 1;
    }
    let n = c.pos - start;
    if !(1..=6).contains(&n) {
        return None;
    }
    let digits = std::str::from_utf8(&c.s[start..c.pos]).ok()?;
    Some(digits.parse::<u32>().ok()? * 10u32.pow(6 - n as u32))
}

/// A date, then optionally `T` or a space and a time.
fn date_time(c: &mut Cursor<'_>) -> Option<NaiveDateTime> {
    let d = date(c)?;
    if c.at_end() {
        return Some(d.and_time(NaiveTime::MIN));
    }
    matches!(c.peek(), Some(b'T' | b't' | b' ')).then_some(())?;
    c.pos += 1;
    time(c).map(|t| d.and_time(t))
}

/// `Z`, or a sign and `HH`, `HHMM` or `HH:MM`: the offset east of UTC in seconds.
fn offset_secs(c: &mut Cursor<'_>) -> Option<i32> {
    while c.eat(b' ') {}
    if c.eat(b'Z') || c.eat(b'z') {
        return Some(0);
    }
    let sign = match c.peek()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    c.pos += 1;
    let hours = c.digits(2)?;
    c.eat(b':');
    let minutes = if c.at_end() { 0 } else { c.digits(2)? };
    (hours <= 15 && minutes < 60).then(|| sign * (hours * 3600 + minutes * 60) as i32)
}

pub(super) fn parse_date(s: &str) -> Option<NaiveDate> {
    let mut c = Cursor::new(s);
    date(&mut c).filter(|_| c.at_end())
}

/// A time; a trailing `Z` is ignored, as RisingWave does.
pub(super) fn parse_time(s: &str) -> Option<NaiveTime> {
    let s = s.strip_suffix('Z').unwrap_or(s);
    let mut c = Cursor::new(s);
    time(&mut c).filter(|_| c.at_end())
}

/// A timestamp without an offset (one with an offset is an error, as in RisingWave).
pub(super) fn parse_timestamp(s: &str) -> Option<NaiveDateTime> {
    let mut c = Cursor::new(s);
    date_time(&mut c).filter(|_| c.at_end())
}

/// A timestamp with an offset, as microseconds since the epoch (UTC). Without an offset the text is read
/// as UTC (a cast in a session's zone reads it with [`parse_timestamptz_parts`]).
pub(super) fn parse_timestamptz(s: &str) -> Option<i64> {
    let (local, offset) = parse_timestamptz_parts(s)?;
    let utc = local.and_utc().timestamp_micros();
    utc.checked_sub(i64::from(offset.unwrap_or(0)) * 1_000_000)
}

/// A timestamp and its offset east of UTC in seconds, if the text gives one.
pub fn parse_timestamptz_parts(s: &str) -> Option<(NaiveDateTime, Option<i32>)> {
    let mut c = Cursor::new(s);
    let local = date_time(&mut c)?;
    let offset = if c.at_end() {
        None
    } else {
        Some(offset_secs(&mut c)?)
    };
    c.at_end().then_some((local, offset))
}
