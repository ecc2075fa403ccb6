use super::*;
use crate::procfs::dentry_state::DentryState;

fn counts(nr_dentry: u64, avail: u64) -> Counts {
    Counts {
        dentry_state: DentryState { nr_dentry, ..Default::default() },
        slab_dentry_active: None,
        mem_available_bytes: avail,
        slab_bytes: 0,
    }
}

fn sample(i: usize, nr_dentry: u64, avail: u64) -> Sample {
    Sample {
        seconds: i as f64 * 0.1,
        unlinks_total: i as u64 * 1000,
        unlinks_per_second: if i == 0 { 0.0 } else { 10_000.0 + i as f64 },
        nr_dentry,
        nr_unused: 0,
        nr_negative: nr_dentry / 2,
        mem_available_bytes: avail,
        slab_reclaimable_bytes: 0,
    }
}

#[test]
fn steady_part_and_high_water() {
    let samples: Vec<Sample> = (0..=20).map(|i| sample(i, 1000 + (i as u64 % 7) * 100, 5000 - i as u64)).collect();
    let s = steady(&samples).unwrap();
    // 20 rates after the first sample; 2 cut at each end.
    assert!((s.from_seconds - 0.3).abs() < 1e-9 && (s.to_seconds - 1.8).abs() < 1e-9, "{s:?}");
    assert!(s.unlinks_per_second_p10 <= s.unlinks_per_second_median);
    assert!(s.unlinks_per_second_median <= s.unlinks_per_second_p90);
    let h = high_water(&samples, &counts(900, 6000), &[&counts(1000, 5000)]);
    assert_eq!(h.nr_dentry, 1600);
    assert_eq!(h.nr_dentry_added, 600);
    assert!((h.at_seconds - 0.6).abs() < 1e-9);
    assert_eq!(h.mem_available_min_bytes, 4980);
    assert_eq!(h.memory_used_bytes, 1020);
    // A lower reading after the build counts too.
    let h = high_water(&samples, &counts(900, 6000), &[&counts(1000, 4000)]);
    assert_eq!(h.memory_used_bytes, 2000);
    assert!(steady(&[]).is_none());
}

#[test]
fn bad_combinations_are_refused() {
    let mut o = Options {
        files: 100,
        dirs: 4,
        workers: 2,
        interval_seconds: 0.1,
        fs: FsType::Tmpfs,
        warm: false,
        force: false,
    };
    assert!(validate(&o).unwrap_err().to_string().contains("--fs tmpfs: churn needs a disk filesystem"));
    o.fs = FsType::Ext4;
    assert!(validate(&o).is_ok());
    o.dirs = 101;
    assert!(validate(&o).unwrap_err().to_string().contains("--dirs 101"));
    o.dirs = 4;
    o.interval_seconds = 0.001;
    assert!(validate(&o).unwrap_err().to_string().contains("--interval"));
}
