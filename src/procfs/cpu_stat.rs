//! `/proc/stat`'s per-CPU lines: how busy each CPU was between two reads.

use std::collections::BTreeMap;

/// Busy and total ticks of one CPU since boot (USER_HZ): total is every
/// column; idle and iowait are not busy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Ticks {
    pub busy: u64,
    pub total: u64,
}

/// The `cpuN` lines of a `/proc/stat` text, by CPU number.
pub(crate) fn parse(text: &str) -> BTreeMap<usize, Ticks> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let cpu: usize = f.next()?.strip_prefix("cpu")?.parse().ok()?;
            let v: Vec<u64> = f.filter_map(|x| x.parse().ok()).collect();
            // user nice system idle iowait irq softirq steal (guest columns are in user).
            let total: u64 = v.iter().take(8).sum();
            let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
            Some((cpu, Ticks { busy: total.saturating_sub(idle), total }))
        })
        .collect()
}

/// Busy share of the CPUs `which` selects between two reads (`None` when
/// no tick passed: too short a window to tell).
pub(crate) fn busy_share(
    before: &BTreeMap<usize, Ticks>,
    after: &BTreeMap<usize, Ticks>,
    which: impl Fn(usize) -> bool,
) -> Option<f64> {
    let (mut busy, mut total) = (0u64, 0u64);
    for (cpu, a) in after.iter().filter(|(c, _)| which(**c)) {
        let b = before.get(cpu).copied().unwrap_or_default();
        busy += a.busy.saturating_sub(b.busy);
        total += a.total.saturating_sub(b.total);
    }
    (total > 0).then(|| busy as f64 / total as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_shares_from_two_reads() {
        let a = parse("cpu  9 0 9 9 0 0 0 0 0 0\ncpu0 10 0 10 80 0 0 0 0 0 0\ncpu1 0 0 0 100 0 0 0 0 0 0\nintr 5\n");
        let b = parse("cpu  9 0 9 9 0 0 0 0 0 0\ncpu0 60 0 10 130 0 0 0 0 0 0\ncpu1 95 0 5 100 0 0 0 0 0 0\n");
        assert_eq!(a.len(), 2, "the aggregate line is not a CPU");
        assert_eq!(busy_share(&a, &b, |c| c == 0), Some(0.5));
        assert_eq!(busy_share(&a, &b, |c| c == 1), Some(1.0));
        assert_eq!(busy_share(&a, &b, |_| true), Some(150.0 / 200.0));
        assert_eq!(busy_share(&a, &a, |_| true), None);
    }
}
