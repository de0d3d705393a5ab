//! Wall-clock instants for the process list: now, and an epoch second as
//! the UTC text a reader (or a model) can compare with what it knows.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch, now.
pub fn now_epoch_s() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// `secs` (since the epoch) as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_text(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let in_day = secs.rem_euclid(86_400);
    let (y, m, d) = civil_date(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        in_day / 3600,
        in_day % 3600 / 60,
        in_day % 60
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01, counted in
/// 400-year eras that start on 1 March (so the leap day ends a year).
fn civil_date(days: i64) -> (i64, u32, u32) {
    let shifted = days + 719_468; // days from 0000-03-01
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_from_march + 2) / 5 + 1) as u32;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_seconds_read_as_utc_dates() {
        assert_eq!(utc_text(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_text(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_text(951_868_799), "2000-02-29T23:59:59Z");
        assert_eq!(utc_text(1_709_251_199), "2024-02-29T23:59:59Z");
        assert_eq!(utc_text(1_735_689_600), "2025-01-01T00:00:00Z");
        assert_eq!(utc_text(-1), "1969-12-31T23:59:59Z");
    }
}
