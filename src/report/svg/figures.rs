//! What the `vm` matrix chart ([`super::matrix`]) shares with the
//! benchmarks' figures: the fit lines, from [`crate::render::plot`].

pub(super) use crate::render::plot::fit_lines;
