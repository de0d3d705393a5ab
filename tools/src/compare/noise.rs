//! How much a run's idle share moves on its own: the spread of the
//! per-chunk idle shares inside one capture. A change between two runs
//! smaller than that spread allows is noise, not an improvement.

use crate::idle::ProcessIdle;
use serde::Serialize;

/// Changes at most this many standard errors of the difference are noise.
pub const NOISE_SIGMAS: f64 = 2.0;

/// The chunk-to-chunk spread of one run's GPU idle share.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Spread {
    /// Chunks of the lifetime the share was measured over.
    pub chunks: usize,
    /// Mean idle share over the chunks, 0-1.
    pub mean: f64,
    /// Standard deviation of the per-chunk idle share, 0-1.
    pub std_dev: f64,
}

impl Spread {
    /// The spread of `idle`'s per-chunk utilisation (idle = 1 - busy).
    pub fn of(idle: &ProcessIdle) -> Spread {
        let shares: Vec<f64> = idle
            .utilization
            .busy_share
            .iter()
            .map(|b| 1.0 - b)
            .collect();
        let n = shares.len();
        if n == 0 {
            return Spread::default();
        }
        let mean = shares.iter().sum::<f64>() / n as f64;
        let var = if n > 1 {
            shares.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        Spread {
            chunks: n,
            mean,
            std_dev: var.sqrt(),
        }
    }

    /// Squared standard error of the mean, `None` with fewer than two chunks.
    fn var_of_mean(&self) -> Option<f64> {
        (self.chunks > 1).then(|| self.std_dev.powi(2) / self.chunks as f64)
    }
}

/// The band, in idle-share units (0-1), inside which a difference between
/// the runs is noise: [`NOISE_SIGMAS`] standard errors of the difference of
/// the two means. `None` when either run has too few chunks to say.
pub fn band(base: &Spread, new: &Spread) -> Option<f64> {
    Some(NOISE_SIGMAS * (base.var_of_mean()? + new.var_of_mean()?).sqrt())
}

/// How a change compares with the noise band.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Significance {
    /// Exactly zero.
    None,
    /// Inside the band: the runs' own spread could give it.
    WithinNoise,
    /// Outside the band, less than three times its width.
    Moderate,
    /// Three times the band or more.
    Clear,
    /// Non-zero, but the files show no spread to judge it by.
    Unknown,
}

/// Judges `change` (idle-share units) against `band`.
pub fn judge(change: f64, band: Option<f64>) -> Significance {
    if change == 0.0 {
        return Significance::None;
    }
    match band {
        None => Significance::Unknown,
        Some(b) if b <= 0.0 => Significance::Unknown,
        Some(b) if change.abs() <= b => Significance::WithinNoise,
        Some(b) if change.abs() < 3.0 * b => Significance::Moderate,
        Some(_) => Significance::Clear,
    }
}
