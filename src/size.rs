//! Dentry counts with suffixes: `100k`, `2.5M`, `1.5G` (powers of 1000),
//! and the named presets of the reclaim sweep.

/// The README's quick sweep: about 3.5–4.3 minutes on 2 cores, with the
/// default repetitions (2 probed, 1 unobserved, 1 unpinned per size). Six
/// sizes spanning 32× rather than four spanning 8×: the extra lever arm pins
/// the longest gap's exponent well enough to test linearity in most runs
/// (not in 2 of 7 idle runs on a noisier VM, which then say so and widen),
/// where 500k–4M × 3 could not in 2 of 3 idle runs (docs/method.md, "The
/// quick sweep's sizes"). 250k's longest gap (about 25 ms) sits above the
/// 10 ms noise floor; 8M needs about 1.8 GB of kernel memory.
pub(crate) const QUICK: [u64; 6] = [250_000, 500_000, 1_000_000, 2_000_000, 4_000_000, 8_000_000];
/// The six sizes of the 5.10 node-lockup report (docs/background.md): `--sizes wide`, or `seed`.
pub(crate) const SEED: [u64; 6] = [100_000, 500_000, 1_000_000, 2_000_000, 5_000_000, 10_000_000];
/// Largest count dentrylab accepts (about 10^12: far beyond any memory).
pub(crate) const MAX_COUNT: u64 = 1_000_000_000_000;

/// Parses one count such as `100k`, `2.5M`, `1.5G` or `250000`. Decimal
/// digits are read exactly (no floating point): `4.1M` is 4,100,000.
pub(crate) fn parse_count(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err("empty size: give a count such as 100k, 2.5M or 1.5G".into());
    }
    let not_a_number = || format!("size {s:?} is not a number (use for example 100k, 2.5M or 1.5G)");
    let (num, exp) = match t.chars().last() {
        Some(c) if c.is_ascii_alphabetic() => {
            let e = match c {
                'k' | 'K' => 3,
                'm' | 'M' => 6,
                'g' | 'G' => 9,
                _ => {
                    let head = &t[..t.len() - c.len_utf8()];
                    if head.is_empty() || head.parse::<f64>().is_err() {
                        return Err(not_a_number());
                    }
                    return Err(format!("size {s:?}: unknown suffix {c:?} (use k, M or G, for example 2.5M)"));
                }
            };
            (&t[..t.len() - 1], e)
        }
        _ => (t, 0),
    };
    if num.starts_with('-') && num.len() > 1 {
        return Err(format!("size {s:?} must be at least 1"));
    }
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    let digits = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() && frac.is_empty() || !digits(int) || !digits(frac) {
        return Err(not_a_number());
    }
    // The fraction's digits past the suffix's exponent must be zeros.
    let frac = frac.trim_end_matches('0');
    if frac.len() > exp {
        return Err(format!("size {s:?} is not a whole number of dentries"));
    }
    let int = int.trim_start_matches('0');
    let too_big = || format!("size {s:?} is larger than the largest supported count ({})", human(MAX_COUNT));
    // Digits of the whole count: integer part, fraction, then zeros.
    if int.len() + exp > 13 {
        return Err(too_big());
    }
    let mut n: u64 = 0;
    for b in int.bytes().chain(frac.bytes()).chain(std::iter::repeat_n(b'0', exp - frac.len())) {
        n = n * 10 + u64::from(b - b'0');
    }
    if n < 1 {
        return Err(format!("size {s:?} must be at least 1"));
    }
    if n > MAX_COUNT {
        return Err(too_big());
    }
    Ok(n)
}

/// Parses `--sizes`: a preset (`quick`, `wide` alias `seed`) or a comma-separated list.
pub(crate) fn parse_sizes(s: &str) -> Result<Vec<u64>, String> {
    match s.trim() {
        "quick" => return Ok(QUICK.to_vec()),
        "wide" | "seed" => return Ok(SEED.to_vec()),
        _ => {}
    }
    let v: Vec<u64> = s.split(',').map(parse_count).collect::<Result<_, _>>()?;
    let mut sorted = v.clone();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted.len() != v.len() {
        return Err(format!("sizes {s:?} repeat a size: list each once (use --reps to repeat)"));
    }
    Ok(sorted)
}

/// A count for people: `100k`, `2.5M`, `1.5G`.
pub fn human(n: u64) -> String {
    let (v, suf) = if n >= 1_000_000_000 {
        (n as f64 / 1e9, "G")
    } else if n >= 1_000_000 {
        (n as f64 / 1e6, "M")
    } else if n >= 1_000 {
        (n as f64 / 1e3, "k")
    } else {
        return n.to_string();
    };
    let s = if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    };
    let s = if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s };
    format!("{s}{suf}")
}

/// Thousands separators: 9,999,922.
pub(crate) fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes for people: 1.5 GiB.
pub(crate) fn bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 { format!("{b} B") } else { format!("{v:.1} {}", UNITS[u]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes() {
        assert_eq!(parse_count("100k").unwrap(), 100_000);
        assert_eq!(parse_count("2.5M").unwrap(), 2_500_000);
        assert_eq!(parse_count("1.5G").unwrap(), 1_500_000_000);
        assert_eq!(parse_count("250000").unwrap(), 250_000);
        assert_eq!(parse_count("1K").unwrap(), 1000);
    }

    #[test]
    fn rejects_bad_sizes() {
        for bad in ["0", "-5", "1.5X", "", "abc", "0.5", "1.0001k", "inf", "NaNk", "2e13"] {
            let e = parse_count(bad).unwrap_err();
            assert!(e.contains(&format!("{bad:?}")) || bad.is_empty(), "{bad}: {e}");
        }
        assert!(parse_count("1.5X").unwrap_err().contains("unknown suffix"));
        assert!(parse_count("abc").unwrap_err().contains("not a number"));
        assert!(parse_count("-5").unwrap_err().contains("at least 1"));
    }

    /// `4.1M`, `8.2M`, `16.1k` were refused as "not a whole
    /// number" (floating-point rounding).
    #[test]
    fn decimal_sizes_are_exact() {
        assert_eq!(parse_count("4.1M").unwrap(), 4_100_000);
        assert_eq!(parse_count("8.2M").unwrap(), 8_200_000);
        assert_eq!(parse_count("16.1k").unwrap(), 16_100);
        assert_eq!(parse_count("1.000001M").unwrap(), 1_000_001);
        assert_eq!(parse_count("0.001k").unwrap(), 1);
        assert_eq!(parse_count(".5k").unwrap(), 500);
        assert_eq!(parse_count("2.50M").unwrap(), 2_500_000);
        assert_eq!(parse_count("1000G").unwrap(), MAX_COUNT);
        assert!(parse_count("1000.000000001G").unwrap_err().contains("largest"));
        assert!(parse_count("1.0000001M").unwrap_err().contains("whole number"));
        // Every size with one decimal under 100 in each unit.
        for unit in [("k", 1_000u64), ("M", 1_000_000), ("G", 1_000_000_000)] {
            for tenths in 1..1000u64 {
                let s = format!("{}.{}{}", tenths / 10, tenths % 10, unit.0);
                assert_eq!(parse_count(&s).unwrap(), tenths * unit.1 / 10, "{s}");
            }
        }
    }

    #[test]
    fn lists_and_presets() {
        assert_eq!(parse_sizes("seed").unwrap(), SEED.to_vec());
        assert_eq!(parse_sizes("wide").unwrap(), SEED.to_vec());
        assert_eq!(parse_sizes("quick").unwrap(), QUICK.to_vec());
        assert_eq!(parse_sizes("1M,100k").unwrap(), vec![100_000, 1_000_000]);
        assert!(parse_sizes("1M,1000k").unwrap_err().contains("repeat"));
        assert!(parse_sizes("1M,,2M").is_err());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4096))]

        /// Arbitrary text gives a count or an error, never a panic.
        #[test]
        fn any_text_parses_or_errs(s in "[0-9.kKmMgGx+-eE ]{0,24}|\\PC{0,24}") {
            if let Ok(n) = parse_count(&s) {
                proptest::prop_assert!((1..=MAX_COUNT).contains(&n));
            }
        }

        /// Every count written as digits, or as a decimal with a suffix,
        /// parses back exactly.
        #[test]
        fn exact_round_trip(n in 1..=MAX_COUNT, zeros in 0usize..3) {
            proptest::prop_assert_eq!(parse_count(&n.to_string()).unwrap(), n);
            for (suffix, exp) in [("k", 3u32), ("M", 6), ("G", 9)] {
                let unit = 10u64.pow(exp);
                let frac = format!("{:0w$}", n % unit, w = exp as usize);
                let s = format!("{}.{frac}{}{suffix}", n / unit, "0".repeat(zeros));
                proptest::prop_assert_eq!(parse_count(&s).unwrap(), n, "{}", s);
            }
        }

        /// `human` rounds to three significant digits: it parses back
        /// within that rounding.
        #[test]
        fn human_round_trips_within_its_rounding(n in 1..=MAX_COUNT) {
            let back = parse_count(&human(n)).unwrap() as f64;
            proptest::prop_assert!((back - n as f64).abs() <= n as f64 * 0.005, "{} → {} → {}", n, human(n), back);
        }
    }

    #[test]
    fn formatting() {
        assert_eq!(human(100_000), "100k");
        assert_eq!(human(1_500_000_000), "1.5G");
        assert_eq!(human(2_500_000), "2.5M");
        assert_eq!(human(55_123_456), "55.1M");
        assert_eq!(human(999), "999");
        assert_eq!(grouped(9_999_922), "9,999,922");
        assert_eq!(grouped(100), "100");
        assert_eq!(bytes(1536), "1.5 KiB");
    }
}
