//! Why a capture ended, as its status says it: the engine's reason, or the
//! operator limit that stopped it, with a sentence naming the limit.

use super::limits::{bytes_text, duration_text, CaptureLimits};
use ingero_probes::StopReason;

/// The `stop_reason` of a capture the engine ended for `engine`, and its
/// `limit_reached` sentence when an operator limit did it: the size watch
/// stopped it (`size_reached`), or the duration that elapsed was the
/// limit's (`duration_is_limit`).
pub fn reason(
    limits: &CaptureLimits,
    engine: StopReason,
    size_reached: bool,
    duration_is_limit: bool,
) -> (String, Option<String>) {
    match engine {
        StopReason::Requested if size_reached => {
            let max = limits.max_bytes.map(bytes_text).unwrap_or_default();
            (
                "max_bytes".into(),
                Some(format!(
                    "stopped when its database reached this server's size limit \
                     (--capture-max-bytes {max}); everything recorded until then is in it"
                )),
            )
        }
        StopReason::Duration if duration_is_limit => {
            let max = limits.max_duration.map(duration_text).unwrap_or_default();
            (
                "max_duration".into(),
                Some(format!(
                    "stopped at this server's time limit (--capture-max-duration {max}); \
                     everything recorded until then is in the database"
                )),
            )
        }
        other => (
            serde_json::to_value(other)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_else(|| format!("{other:?}").to_lowercase()),
            None,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_limit_is_named_only_when_it_stopped_the_capture() {
        let limits = CaptureLimits {
            max_duration: Some(Duration::from_secs(60)),
            max_bytes: Some(1 << 20),
            max_concurrent: 1,
        };
        let (r, why) = reason(&limits, StopReason::Requested, true, false);
        assert_eq!(r, "max_bytes");
        assert!(why.is_some_and(|w| w.contains("--capture-max-bytes 1.0 MiB")));
        let (r, why) = reason(&limits, StopReason::Duration, false, true);
        assert_eq!(r, "max_duration");
        assert!(why.is_some_and(|w| w.contains("--capture-max-duration 1m")));
        assert_eq!(
            reason(&limits, StopReason::Duration, false, false),
            ("duration".to_string(), None)
        );
        assert_eq!(
            reason(&limits, StopReason::Requested, false, true),
            ("requested".to_string(), None)
        );
        assert_eq!(
            reason(&limits, StopReason::TargetExited, true, true),
            ("target_exited".to_string(), None)
        );
    }
}
