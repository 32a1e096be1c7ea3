//! Calendar arithmetic and `strftime`-style formatting in UTC (the sandbox
//! has no time zone data), for `date`, `ls -l`, `stat`, `tar -tv`.

use std::time::{SystemTime, UNIX_EPOCH};

/// A broken-down UTC time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tm {
    /// Full year.
    pub year: i64,
    /// 1–12.
    pub month: u32,
    /// 1–31.
    pub day: u32,
    /// 0–23.
    pub hour: u32,
    /// 0–59.
    pub min: u32,
    /// 0–60.
    pub sec: u32,
    /// 0 = Sunday.
    pub wday: u32,
    /// 0–365.
    pub yday: u32,
    /// Nanoseconds.
    pub nanos: u32,
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
const MONTHS_LONG: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const DAYS_LONG: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// Days since 1970-01-01 for a civil date (Howard Hinnant's algorithm).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

/// Breaks seconds since the epoch into UTC fields.
pub fn gmtime(secs: i64, nanos: u32) -> Tm {
    let days = secs.div_euclid(86400);
    let rem = secs.rem_euclid(86400) as u32;
    let z = days + 719468;
    let era = if z >= 0 { z } else { z - 146096 } / 146097;
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = if m <= 2 { y + 1 } else { y };
    let yday = (days - days_from_civil(year, 1, 1)) as u32;
    Tm {
        year,
        month: m,
        day: d,
        hour: rem / 3600,
        min: rem / 60 % 60,
        sec: rem % 60,
        wday: (days + 4).rem_euclid(7) as u32,
        yday,
        nanos,
    }
}

/// Seconds and nanoseconds since the epoch of a system time.
pub fn epoch(t: SystemTime) -> (i64, u32) {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (d.as_secs() as i64, d.subsec_nanos()),
        Err(e) => (-(e.duration().as_secs() as i64), 0),
    }
}

/// Now, in seconds and nanoseconds since the epoch.
pub fn now() -> (i64, u32) {
    epoch(SystemTime::now())
}

/// Formats `tm` with a `strftime` subset (`%Y %m %d %H %M %S %y %b %B %a
/// %A %e %j %s %N %Z %z %T %D %F %R %c %p %I %u %w %n %t %%`).
pub fn strftime(fmt: &str, tm: &Tm, secs: i64) -> String {
    let mut out = String::new();
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        // GNU flags: `-` (no padding), `_` (space padding).
        let mut pad = '0';
        let mut nopad = false;
        while let Some(&f) = chars.peek() {
            match f {
                '-' => nopad = true,
                '_' => pad = ' ',
                '0' => pad = '0',
                _ => break,
            }
            chars.next();
        }
        let num = |v: i64, w: usize| -> String {
            if nopad {
                v.to_string()
            } else if pad == ' ' {
                format!("{v:>w$}")
            } else {
                format!("{v:0w$}")
            }
        };
        let Some(spec) = chars.next() else {
            out.push('%');
            break;
        };
        let s = match spec {
            'Y' => tm.year.to_string(),
            'C' => num(tm.year / 100, 2),
            'y' => num(tm.year % 100, 2),
            'm' => num(tm.month as i64, 2),
            'd' => num(tm.day as i64, 2),
            'e' => format!("{:>2}", tm.day),
            'H' => num(tm.hour as i64, 2),
            'k' => format!("{:>2}", tm.hour),
            'I' => num(((tm.hour + 11) % 12 + 1) as i64, 2),
            'l' => format!("{:>2}", (tm.hour + 11) % 12 + 1),
            'M' => num(tm.min as i64, 2),
            'S' => num(tm.sec as i64, 2),
            'N' => format!("{:09}", tm.nanos),
            'p' => if tm.hour < 12 { "AM" } else { "PM" }.into(),
            'P' => if tm.hour < 12 { "am" } else { "pm" }.into(),
            'b' | 'h' => MONTHS[tm.month as usize - 1].into(),
            'B' => MONTHS_LONG[tm.month as usize - 1].into(),
            'a' => DAYS[tm.wday as usize].into(),
            'A' => DAYS_LONG[tm.wday as usize].into(),
            'u' => (if tm.wday == 0 { 7 } else { tm.wday }).to_string(),
            'w' => tm.wday.to_string(),
            'j' => num(tm.yday as i64 + 1, 3),
            's' => secs.to_string(),
            'Z' => "UTC".into(),
            'z' => "+0000".into(),
            ':' if chars.peek() == Some(&'z') => {
                chars.next();
                "+00:00".into()
            }
            'T' => format!("{:02}:{:02}:{:02}", tm.hour, tm.min, tm.sec),
            'R' => format!("{:02}:{:02}", tm.hour, tm.min),
            'D' => format!("{:02}/{:02}/{:02}", tm.month, tm.day, tm.year % 100),
            'F' => format!("{}-{:02}-{:02}", tm.year, tm.month, tm.day),
            'c' => format!(
                "{} {} {:>2} {:02}:{:02}:{:02} {}",
                DAYS[tm.wday as usize],
                MONTHS[tm.month as usize - 1],
                tm.day,
                tm.hour,
                tm.min,
                tm.sec,
                tm.year
            ),
            'x' => format!("{:02}/{:02}/{:02}", tm.month, tm.day, tm.year % 100),
            'X' => format!("{:02}:{:02}:{:02}", tm.hour, tm.min, tm.sec),
            'n' => "\n".into(),
            't' => "\t".into(),
            '%' => "%".into(),
            'G' => tm.year.to_string(),
            'V' | 'U' | 'W' => num(((tm.yday + 7 - (tm.wday + 6) % 7) / 7) as i64, 2),
            other => format!("%{other}"),
        };
        out.push_str(&s);
    }
    out
}

/// `ls -l`'s time column: `Mon dd HH:MM` within six months of now, else
/// `Mon dd  YYYY`.
pub fn ls_time(secs: i64, now: i64) -> String {
    let tm = gmtime(secs, 0);
    let six_months = 15_778_476; // 365.2425 * 86400 / 2
    if secs > now - six_months && secs <= now + 60 {
        format!(
            "{} {:>2} {:02}:{:02}",
            MONTHS[tm.month as usize - 1],
            tm.day,
            tm.hour,
            tm.min
        )
    } else {
        format!(
            "{} {:>2}  {}",
            MONTHS[tm.month as usize - 1],
            tm.day,
            tm.year
        )
    }
}

/// Parses the dates `date -d` accepts: `@SECONDS`, `YYYY-MM-DD`,
/// `YYYY-MM-DD HH:MM[:SS]` (or with `T`), `now`, `today`, `yesterday`,
/// `tomorrow`.
pub fn parse_date(s: &str, now: i64) -> Option<i64> {
    let s = s.trim();
    if let Some(n) = s.strip_prefix('@') {
        return n.parse().ok();
    }
    let day = 86400;
    let midnight = now - now.rem_euclid(day);
    match s {
        "now" | "" => return Some(now),
        "today" => return Some(now),
        "yesterday" => return Some(now - day),
        "tomorrow" => return Some(now + day),
        _ => {}
    }
    let s = s.trim_end_matches('Z').trim_end_matches(" UTC");
    let (date, time) = match s.split_once([' ', 'T']) {
        Some((d, t)) => (d, Some(t)),
        None => (s, None),
    };
    let mut it = date.split('-');
    let y: i64 = it.next()?.parse().ok()?;
    let m: u32 = it.next()?.parse().ok()?;
    let d: u32 = it.next()?.parse().ok()?;
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let _ = (midnight, is_leap(y));
    let mut secs = days_from_civil(y, m, d) * day;
    if let Some(t) = time {
        let t = t.split(['+', '.']).next().unwrap_or(t);
        let parts: Vec<&str> = t.split(':').collect();
        let h: i64 = parts.first()?.parse().ok()?;
        let mi: i64 = parts.get(1).map_or(Some(0), |x| x.parse().ok())?;
        let se: i64 = parts.get(2).map_or(Some(0), |x| x.parse().ok())?;
        secs += h * 3600 + mi * 60 + se;
    }
    Some(secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_round_trip() {
        let t = gmtime(1_700_000_000, 0);
        assert_eq!(
            (t.year, t.month, t.day, t.hour, t.min, t.sec),
            (2023, 11, 14, 22, 13, 20)
        );
        assert_eq!(t.wday, 2);
        assert_eq!(
            days_from_civil(2023, 11, 14) * 86400 + 22 * 3600 + 13 * 60 + 20,
            1_700_000_000
        );
        assert_eq!(
            strftime("%Y-%m-%d %H:%M:%S %a %b %e %j", &t, 0),
            "2023-11-14 22:13:20 Tue Nov 14 318"
        );
    }
}
