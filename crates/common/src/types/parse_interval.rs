//! Intervals from text, as RisingWave reads them: PostgreSQL's verbose form (`1 year 2 mons 3 days`,
//! `-1 hours`, `1 day 01:02:03.5`, a bare number of seconds `6`), ISO 8601 (`P1Y2M3DT4H5M6S`, designators
//! may be omitted: `P1Y2M`), and the SQL-standard form with a unit given apart (`interval '1' hour`).

use std::str::FromStr;

use super::from_text::ParseError;
use super::{Interval, USECS_PER_SEC};

/// A unit of an interval (RisingWave's `DateTimeField`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DateTimeField {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
}

impl FromStr for DateTimeField {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, ParseError> {
        Ok(match s.to_lowercase().as_str() {
            "years" | "year" | "yrs" | "yr" | "y" => Self::Year,
            "months" | "month" | "mons" | "mon" => Self::Month,
            "days" | "day" | "d" => Self::Day,
            "hours" | "hour" | "hrs" | "hr" | "h" => Self::Hour,
            "minutes" | "minute" | "mins" | "min" | "m" => Self::Minute,
            "seconds" | "second" | "secs" | "sec" | "s" => Self::Second,
            _ => return Err(ParseError::IntervalUnit(s.to_owned())),
        })
    }
}

impl DateTimeField {
    /// `n` of this unit, `None` on overflow.
    pub fn interval(self, n: i64) -> Option<Interval> {
        let usecs = |per: i64| {
            n.checked_mul(per)
                .map(|u| Interval::from_month_day_usec(0, 0, u))
        };
        match self {
            Self::Year => {
                let months = i32::try_from(n.checked_mul(12)?).ok()?;
                Some(Interval::from_month_day_usec(months, 0, 0))
            }
            Self::Month => Some(Interval::from_month_day_usec(i32::try_from(n).ok()?, 0, 0)),
            Self::Day => Some(Interval::from_month_day_usec(0, i32::try_from(n).ok()?, 0)),
            Self::Hour => usecs(3600 * USECS_PER_SEC),
            Self::Minute => usecs(60 * USECS_PER_SEC),
            Self::Second => usecs(USECS_PER_SEC),
        }
    }
}

impl Interval {
    /// Add field by field; `None` when a field overflows.
    pub fn checked_add(&self, other: &Self) -> Option<Self> {
        Some(Self::from_month_day_usec(
            self.months().checked_add(other.months())?,
            self.days().checked_add(other.days())?,
            self.usecs().checked_add(other.usecs())?,
        ))
    }

    /// The SQL-standard form: one integer in `unit` (`interval '1' hour`).
    pub fn parse_with_unit(s: &str, unit: DateTimeField) -> Result<Self, ParseError> {
        let invalid = || ParseError::Interval(s.to_owned());
        match tokenize(s)?.as_slice() {
            [Token::Num(n)] => unit.interval(*n).ok_or_else(invalid),
            _ => Err(invalid()),
        }
    }
}

impl FromStr for Interval {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, ParseError> {
        if s.starts_with('P') {
            parse_iso_8601(s)
        } else {
            parse_postgres(s)
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Num(i64),
    Seconds(f64),
    Unit(DateTimeField),
}

/// Numbers, unit words and a trailing `H:M:S` clock, which becomes hour, minute and second tokens.
fn tokenize(s: &str) -> Result<Vec<Token>, ParseError> {
    let s = s.trim();
    let mut tokens = Vec::new();
    let (mut num, mut word, mut clock) = (String::new(), String::new(), Vec::new());
    for (i, c) in s.chars().enumerate() {
        match c {
            '-' | '+' | '.' => num.push(c),
            c if c.is_ascii_digit() => {
                flush_word(&mut word, &mut tokens)?;
                num.push(c);
            }
            c if c.is_ascii_alphabetic() => {
                flush_num(&mut num, &mut tokens)?;
                word.push(c);
            }
            c if c.is_ascii_whitespace() => {
                flush_word(&mut word, &mut tokens)?;
                flush_num(&mut num, &mut tokens)?;
            }
            ':' if num.is_empty() => return Err(ParseError::Interval(s.to_owned())),
            ':' => clock.push(std::mem::take(&mut num)),
            c => {
                return Err(ParseError::IntervalChar {
                    offset: i,
                    text: s.to_owned(),
                    c,
                });
            }
        }
    }
    if clock.is_empty() {
        flush_num(&mut num, &mut tokens)?;
    } else if !num.is_empty() {
        clock.push(num);
    }
    flush_word(&mut word, &mut tokens)?;
    clock_tokens(&clock, &mut tokens).ok_or_else(|| ParseError::Interval(format!("{clock:?}")))?;
    Ok(tokens)
}

fn flush_num(num: &mut String, tokens: &mut Vec<Token>) -> Result<(), ParseError> {
    if !num.is_empty() {
        let n = num.parse().map_err(|_| ParseError::Interval(num.clone()))?;
        tokens.push(Token::Num(n));
        num.clear();
    }
    Ok(())
}

fn flush_word(word: &mut String, tokens: &mut Vec<Token>) -> Result<(), ParseError> {
    if !word.is_empty() {
        tokens.push(Token::Unit(word.parse()?));
        word.clear();
    }
    Ok(())
}

/// `H`, `H:M` or `H:M:S[.f]`; minutes and seconds take the sign of the hours.
fn clock_tokens(clock: &[String], tokens: &mut Vec<Token>) -> Option<()> {
    if clock.len() > 3 {
        return None;
    }
    let Some(hours) = clock.first() else {
        return Some(());
    };
    let negative = hours.starts_with('-');
    tokens.extend([
        Token::Num(hours.parse().ok()?),
        Token::Unit(DateTimeField::Hour),
    ]);
    if let Some(m) = clock.get(1) {
        let m: i64 = m.parse().ok().filter(|m| (0..60).contains(m))?;
        let m = if negative { -m } else { m };
        tokens.extend([Token::Num(m), Token::Unit(DateTimeField::Minute)]);
    }
    if let Some(sec) = clock.get(2) {
        // PostgreSQL allows a leap second, `60.x`.
        let sec: f64 = sec.parse().ok().filter(|s| (0.0..61.0).contains(s))?;
        let sec = if negative { -sec } else { sec };
        tokens.extend([Token::Seconds(sec), Token::Unit(DateTimeField::Second)]);
    }
    Some(())
}

/// Pairs of a number and its unit, summed; a last number without a unit is seconds.
fn parse_postgres(s: &str) -> Result<Interval, ParseError> {
    let invalid = || ParseError::Interval(s.to_owned());
    let mut tokens = tokenize(s)?;
    if tokens.len() % 2 == 1 && matches!(tokens.last(), Some(Token::Num(_))) {
        tokens.push(Token::Unit(DateTimeField::Second));
    }
    if tokens.len() % 2 == 1 {
        return Err(invalid());
    }
    let mut total = Interval::default();
    for pair in tokens.chunks_exact(2) {
        let part = match pair {
            [Token::Num(n), Token::Unit(unit)] => unit.interval(*n),
            [Token::Seconds(sec), Token::Unit(DateTimeField::Second)] => {
                // Microseconds, rounded half to even as PostgreSQL does.
                let usecs = (sec * USECS_PER_SEC as f64).round_ties_even();
                Some(Interval::from_month_day_usec(0, 0, usecs as i64))
            }
            _ => None,
        };
        total = part
            .and_then(|p| total.checked_add(&p))
            .ok_or_else(invalid)?;
    }
    Ok(total)
}

/// `P[nY][nM][nD][T[nH][nM][n[.f]S]]`; fractional seconds truncated to microseconds.
fn parse_iso_8601(s: &str) -> Result<Interval, ParseError> {
    let invalid = || ParseError::IntervalIso(s.to_owned());
    let body = s.strip_prefix('P').ok_or_else(invalid)?;
    let (date, time) = body.split_once('T').unwrap_or((body, ""));
    if body.is_empty() || body.ends_with('T') {
        return Err(invalid());
    }
    let mut total = Interval::default();
    for (part, in_time) in [(date, false), (time, true)] {
        for (number, designator) in iso_parts(part).ok_or_else(invalid)? {
            let add = iso_part(number, designator, in_time).ok_or_else(invalid)?;
            total = total.checked_add(&add).ok_or_else(invalid)?;
        }
    }
    Ok(total)
}

/// `1Y2M` -> `[("1", 'Y'), ("2", 'M')]`.
fn iso_parts(s: &str) -> Option<Vec<(&str, char)>> {
    let mut parts = Vec::new();
    let mut start = 0;
    for (i, c) in s.char_indices() {
        if c.is_ascii_alphabetic() {
            let number = &s[start..i];
            if number.is_empty() {
                return None;
            }
            parts.push((number, c));
            start = i + 1;
        } else if !(c.is_ascii_digit() || c == '.') {
            return None;
        }
    }
    (start == s.len()).then_some(parts)
}

fn iso_part(number: &str, designator: char, in_time: bool) -> Option<Interval> {
    if in_time && designator == 'S' {
        let secs = rust_decimal::Decimal::from_str_exact(number).ok()?;
        let usecs = secs
            .checked_mul(rust_decimal::Decimal::from(USECS_PER_SEC))?
            .trunc();
        return Some(Interval::from_month_day_usec(
            0,
            0,
            i64::try_from(usecs).ok()?,
        ));
    }
    let n: i64 = number.parse().ok()?;
    let unit = match (in_time, designator) {
        (false, 'Y') => DateTimeField::Year,
        (false, 'M') => DateTimeField::Month,
        (false, 'D') => DateTimeField::Day,
        (false, 'W') => return DateTimeField::Day.interval(n.checked_mul(7)?),
        (true, 'H') => DateTimeField::Hour,
        (true, 'M') => DateTimeField::Minute,
        _ => return None,
    };
    unit.interval(n)
}
