//! Fits, extrapolation, thresholds and statistics: pure functions of
//! measured numbers.

pub mod edge;
pub mod fit;
pub mod histogram;
pub mod scaling;
pub mod stats;
pub mod verdict;
