//! Dentry counts with suffixes: `100k`, `2.5M`, `1.5G` (powers of 1000),
//! and the named presets of the reclaim sweep.

/// The README's quick sweep: finishes in well under a minute on 2 cores.
pub const QUICK: [u64; 4] = [100_000, 500_000, 1_000_000, 2_000_000];
/// Seed 000's exact table.
pub const SEED: [u64; 6] = [100_000, 500_000, 1_000_000, 2_000_000, 5_000_000, 10_000_000];
/// Largest count dentrylab accepts (about 10^12: far beyond any memory).
pub const MAX_COUNT: u64 = 1_000_000_000_000;

/// Parses one count such as `100k`, `2.5M`, `1.5G` or `250000`.
pub fn parse_count(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err("empty size: give a count such as 100k, 2.5M or 1.5G".into());
    }
    let (num, mult) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let head = &t[..i];
            if head.is_empty() || head.parse::<f64>().is_err() {
                return Err(format!("size {s:?} is not a number (use for example 100k, 2.5M or 1.5G)"));
            }
            let m = match c {
                'k' | 'K' => 1e3,
                'm' | 'M' => 1e6,
                'g' | 'G' => 1e9,
                _ => return Err(format!("size {s:?}: unknown suffix {c:?} (use k, M or G, for example 2.5M)")),
            };
            (&t[..i], m)
        }
        _ => (t, 1.0),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("size {s:?} is not a number (use for example 100k, 2.5M or 1.5G)"))?;
    if !v.is_finite() {
        return Err(format!("size {s:?} is not a finite number"));
    }
    let n = v * mult;
    if n < 1.0 {
        return Err(format!("size {s:?} must be at least 1"));
    }
    if n.fract() != 0.0 {
        return Err(format!("size {s:?} is not a whole number of dentries"));
    }
    if n > MAX_COUNT as f64 {
        return Err(format!("size {s:?} is larger than the largest supported count ({})", human(MAX_COUNT)));
    }
    Ok(n as u64)
}

/// Parses `--sizes`: a preset (`quick`, `seed`) or a comma-separated list.
pub fn parse_sizes(s: &str) -> Result<Vec<u64>, String> {
    match s.trim() {
        "quick" => return Ok(QUICK.to_vec()),
        "seed" => return Ok(SEED.to_vec()),
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
    let s = if v >= 100.0 { format!("{v:.0}") } else if v >= 10.0 { format!("{v:.1}") } else { format!("{v:.2}") };
    let s = if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s };
    format!("{s}{suf}")
}

/// Thousands separators: 9,999,922.
pub fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes for people: 1.5 GiB.
pub fn bytes(b: u64) -> String {
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
        assert!(parse_count("-5").unwrap_err().contains("at least 1"));
    }

    #[test]
    fn lists_and_presets() {
        assert_eq!(parse_sizes("seed").unwrap(), SEED.to_vec());
        assert_eq!(parse_sizes("quick").unwrap(), QUICK.to_vec());
        assert_eq!(parse_sizes("1M,100k").unwrap(), vec![100_000, 1_000_000]);
        assert!(parse_sizes("1M,1000k").unwrap_err().contains("repeat"));
        assert!(parse_sizes("1M,,2M").is_err());
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
