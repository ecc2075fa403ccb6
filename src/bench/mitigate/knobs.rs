//! The knobs `mitigate` compares, the `--setting KNOB=V1,V2,…` grammar,
//! the combinations, and the guarded sysctls.
//!
//! A sysctl is global: before the first write, a guardian (a copy of
//! dentrylab outside the sandbox, `sys::guardian`) is started with the
//! original value, and writes it back when dentrylab ends, however it ends.

use std::time::Duration;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::sys::guardian::Guardian;

/// Shortest and longest `drop-caches-every`.
pub(crate) const MIN_DROP_EVERY: Duration = Duration::from_secs(1);
pub(crate) const MAX_DROP_EVERY: Duration = Duration::from_secs(3600);
/// Most combinations one run may have.
pub(crate) const MAX_COMBINATIONS: usize = 64;
/// Most values per knob.
pub(crate) const MAX_VALUES: usize = 16;
/// Largest vfs_cache_pressure (and its denominator) accepted: the kernel
/// takes any non-negative int, values past this are typing mistakes.
pub(crate) const MAX_PRESSURE: u64 = 100_000;
/// Smallest `memory-limit` value.
pub(crate) const MIN_MEMORY_LIMIT: u64 = 4 << 20;

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::VariantArray,
    strum::VariantNames,
)]
pub(crate) enum Knob {
    #[serde(rename = "vm.vfs_cache_pressure")]
    #[strum(serialize = "vm.vfs_cache_pressure")]
    VfsCachePressure,
    #[serde(rename = "vm.vfs_cache_pressure_denom")]
    #[strum(serialize = "vm.vfs_cache_pressure_denom")]
    VfsCachePressureDenom,
    #[serde(rename = "fs.dentry-negative")]
    #[strum(serialize = "fs.dentry-negative")]
    DentryNegative,
    /// Not a sysctl: dentrylab writes 2 to /proc/sys/vm/drop_caches on this period.
    #[serde(rename = "drop-caches-every")]
    #[strum(serialize = "drop-caches-every")]
    DropCachesEvery,
    /// Not a sysctl: the limit of the run's own memory cgroup (per
    /// combination, instead of `--memory-limit`); nothing global.
    #[serde(rename = "memory-limit")]
    #[strum(serialize = "memory-limit")]
    MemoryLimit,
}

impl Knob {
    /// Every knob's name, in declaration order (from the enum: strum).
    pub(crate) const NAMES: &'static [&'static str] = <Knob as strum::VariantNames>::VARIANTS;

    pub(crate) fn name(self) -> &'static str {
        self.into()
    }

    /// Whether the knob changes the whole machine (needs `--allow-global`).
    pub(crate) fn is_global(self) -> bool {
        self != Knob::MemoryLimit
    }

    /// The sources of negative dentries (and the dentries) the knob acts
    /// on, for its verdict line (fs/dcache.c, fs/super.c, mm/vmscan.c).
    pub(crate) fn acts_on(self) -> &'static str {
        match self {
            Knob::DentryNegative => {
                "acts in d_delete() only: an unlinked file's dentry is dropped instead of becoming negative; the \
                 negatives that failed lookups create (the filesystem's lookup adds the name with no inode) are untouched"
            }
            Knob::VfsCachePressure | Knob::VfsCachePressureDenom => {
                "acts on every unused dentry on the LRU, negative (from unlink or a failed lookup) or positive, and \
                 only when reclaim runs the shrinker (super_cache_count scales what it reports): under no memory \
                 pressure it does nothing"
            }
            Knob::DropCachesEvery => {
                "acts on every unused dentry of every filesystem and cgroup, negative (from unlink or a failed \
                 lookup) or positive, at each drop (drop_slab runs the shrinkers whatever the pressure)"
            }
            Knob::MemoryLimit => {
                "acts on the unused dentries charged to the run's cgroup, negative or positive, through the \
                 cgroup's reclaim when a charge hits the limit, and only for an allocation that may enter the \
                 filesystem (super_cache_scan needs __GFP_FS); otherwise the cgroup's OOM killer fires"
            }
        }
    }

    /// The sysctl file, for the knobs that are sysctls.
    pub(crate) fn sysctl_path(self) -> Option<&'static str> {
        match self {
            Knob::VfsCachePressure => Some("/proc/sys/vm/vfs_cache_pressure"),
            Knob::VfsCachePressureDenom => Some("/proc/sys/vm/vfs_cache_pressure_denom"),
            Knob::DentryNegative => Some("/proc/sys/fs/dentry-negative"),
            Knob::DropCachesEvery | Knob::MemoryLimit => None,
        }
    }

    fn from_name(s: &str) -> Option<Knob> {
        <Knob as strum::VariantArray>::VARIANTS.iter().copied().find(|k| k.name() == s)
    }

    /// Parses one value of this knob: a number in range, or for
    /// `drop-caches-every` a duration (`off` = never).
    fn value(self, s: &str) -> Result<Value, String> {
        let s = s.trim();
        match self {
            Knob::DropCachesEvery => {
                if s == "off" {
                    return Ok(Value::Off);
                }
                let d = parse_duration(s)
                    .ok_or_else(|| format!("{}={s}: not a duration (write 10s, 500ms, 2m or off)", self.name()))?;
                if !(MIN_DROP_EVERY..=MAX_DROP_EVERY).contains(&d) {
                    return Err(format!("{}={s}: use 1s to 1h (or off)", self.name()));
                }
                Ok(Value::Every(d.as_secs_f64()))
            }
            Knob::MemoryLimit => {
                let b = parse_memory(s).map_err(|e| format!("{}={s}: {e}", self.name()))?;
                if b < MIN_MEMORY_LIMIT {
                    return Err(format!("{}={s}: at least 4M (the workload's process itself needs that)", self.name()));
                }
                Ok(Value::Bytes(b))
            }
            Knob::VfsCachePressure => self.number(s, 0, MAX_PRESSURE),
            Knob::VfsCachePressureDenom => self.number(s, 1, MAX_PRESSURE),
            Knob::DentryNegative => self.number(s, 0, 1),
        }
    }

    /// A whole-number value from `lo` to `hi`.
    fn number(self, s: &str, lo: u64, hi: u64) -> Result<Value, String> {
        let v: u64 = s.parse().map_err(|_| format!("{}={s}: not a whole number", self.name()))?;
        if !(lo..=hi).contains(&v) {
            return Err(format!("{}={v}: out of range, use {lo} to {hi}", self.name()));
        }
        Ok(Value::Number(v))
    }
}

/// A duration: `500ms`, `10s`, `2m`, `1h`, or seconds without a unit.
pub(crate) fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = s.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num.trim().parse().ok()?;
    (v.is_finite() && v >= 0.0 && v * scale < 1e9).then(|| Duration::from_secs_f64(v * scale))
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Value {
    Number(u64),
    /// drop-caches-every: the period, seconds.
    Every(f64),
    Off,
    /// memory-limit: bytes.
    Bytes(u64),
}

impl Value {
    /// The period of a `drop-caches-every` value, seconds.
    pub(crate) fn every(self) -> Option<f64> {
        match self {
            Value::Every(s) => Some(s),
            Value::Number(_) | Value::Off | Value::Bytes(_) => None,
        }
    }

    /// The bytes of a `memory-limit` value.
    pub(crate) fn bytes(self) -> Option<u64> {
        match self {
            Value::Bytes(b) => Some(b),
            Value::Number(_) | Value::Every(_) | Value::Off => None,
        }
    }
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Number(n) => write!(f, "{n}"),
            Value::Every(s) => write!(f, "{s}s"),
            Value::Off => f.write_str("off"),
            Value::Bytes(b) => match b {
                b if b % (1 << 30) == 0 => write!(f, "{}G", b >> 30),
                b if b % (1 << 20) == 0 => write!(f, "{}M", b >> 20),
                b if b % (1 << 10) == 0 => write!(f, "{}K", b >> 10),
                b => write!(f, "{b}"),
            },
        }
    }
}

/// One `--setting KNOB=V1,V2,…`: the first value is the baseline's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Setting {
    pub knob: Knob,
    pub values: Vec<Value>,
}

/// Parses `--setting` (the clap value parser).
pub(crate) fn parse_setting(s: &str) -> Result<Setting, String> {
    let (name, values) =
        s.split_once('=').ok_or_else(|| format!("{s:?} is not KNOB=V1,V2 (for example fs.dentry-negative=0,1)"))?;
    let knob = Knob::from_name(name.trim())
        .ok_or_else(|| format!("unknown knob {:?}: use one of {}", name.trim(), Knob::NAMES.join(", ")))?;
    let values: Vec<Value> = values.split(',').map(|v| knob.value(v)).collect::<Result<_, _>>()?;
    if values.len() > MAX_VALUES {
        return Err(format!("{}: at most {MAX_VALUES} values", knob.name()));
    }
    for (i, v) in values.iter().enumerate() {
        if values[..i].contains(v) {
            return Err(format!("{}: the value {v} is given twice", knob.name()));
        }
    }
    if knob == Knob::DropCachesEvery && values.len() == 1 && values[0] != Value::Off {
        // One value would make the drops the baseline: compare with none.
        return Ok(Setting { knob, values: vec![Value::Off, values[0]] });
    }
    Ok(Setting { knob, values })
}

/// One combination: a value per knob, in the order of the settings.
pub(crate) type Combination = Vec<(Knob, Value)>;

/// Every combination, the first values first (the baseline), the last
/// setting varying fastest.
pub(crate) fn combinations(settings: &[Setting]) -> Vec<Combination> {
    let mut out: Vec<Combination> = vec![Vec::new()];
    for s in settings {
        out = out
            .into_iter()
            .flat_map(|c| s.values.iter().map(move |v| [c.clone(), vec![(s.knob, *v)]].concat()))
            .collect();
    }
    out
}

/// A label for a combination: `fs.dentry-negative=1 drop-caches-every=10s`.
pub(crate) fn label(c: &Combination) -> String {
    if c.is_empty() {
        return "defaults".into();
    }
    c.iter().map(|(k, v)| format!("{}={v}", k.name())).collect::<Vec<_>>().join(" ")
}

/// A sysctl changed for the run, and what happened to it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SysctlChange {
    pub name: String,
    pub path: String,
    pub original: String,
    /// The values written during the run, in order of first use.
    pub written: Vec<String>,
    /// Read back after the restore.
    pub restored: Option<String>,
}

/// The sysctls of the run, each guarded.
pub(crate) struct Sysctls {
    guarded: Vec<(Knob, SysctlChange, Guardian)>,
}

impl Sysctls {
    /// Reads the originals and starts a guardian for each sysctl knob.
    /// Call before entering the sandbox.
    pub(crate) fn guard(settings: &[Setting]) -> Result<Sysctls> {
        let mut guarded = Vec::new();
        for s in settings {
            let Some(path) = s.knob.sysctl_path() else { continue };
            let (g, original) = Guardian::sysctl(path, s.knob.name())?;
            let change = SysctlChange {
                name: s.knob.name().into(),
                path: path.into(),
                original,
                written: Vec::new(),
                restored: None,
            };
            guarded.push((s.knob, change, g));
        }
        Ok(Sysctls { guarded })
    }

    /// Writes the combination's sysctl values.
    pub(crate) fn apply(&mut self, c: &Combination) -> Result<()> {
        for (knob, value) in c {
            let Some((_, change, _)) = self.guarded.iter_mut().find(|(k, _, _)| k == knob) else { continue };
            let text = value.to_string();
            std::fs::write(&change.path, format!("{text}\n")).with_context(|| {
                format!("cannot set {} to {text} (needs root in the initial namespace)", change.name)
            })?;
            if !change.written.contains(&text) {
                change.written.push(text);
            }
        }
        Ok(())
    }

    /// Puts every original back, reads it back, and lets the guardians go.
    pub(crate) fn restore(self) -> Result<Vec<SysctlChange>> {
        let mut out = Vec::new();
        let mut err = None;
        for (_, mut change, g) in self.guarded {
            if let Err(e) = std::fs::write(&change.path, format!("{}\n", change.original)) {
                err.get_or_insert(anyhow::anyhow!("cannot restore {} to {}: {e}", change.name, change.original));
            }
            change.restored = std::fs::read_to_string(&change.path).ok().map(|s| s.trim().to_string());
            g.finish();
            out.push(change);
        }
        match err {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The knobs' names come from the enum (strum), as their serde names.
    #[test]
    fn knob_names_come_from_the_enum() {
        assert_eq!(
            Knob::NAMES,
            [
                "vm.vfs_cache_pressure",
                "vm.vfs_cache_pressure_denom",
                "fs.dentry-negative",
                "drop-caches-every",
                "memory-limit"
            ]
        );
        for &k in <Knob as strum::VariantArray>::VARIANTS {
            assert_eq!(Knob::from_name(k.name()), Some(k));
            assert_eq!(serde_json::to_value(k).unwrap(), k.name());
        }
    }

    #[test]
    fn grammar() {
        let s = parse_setting("fs.dentry-negative=0,1").unwrap();
        assert_eq!(s.knob, Knob::DentryNegative);
        assert_eq!(s.values, vec![Value::Number(0), Value::Number(1)]);
        let s = parse_setting("drop-caches-every=10s").unwrap();
        assert_eq!(s.values, vec![Value::Off, Value::Every(10.0)]);
        let s = parse_setting("memory-limit=16M,1G").unwrap();
        assert_eq!(s.values, vec![Value::Bytes(16 << 20), Value::Bytes(1 << 30)]);
        assert_eq!(label(&combinations(&[s])[0]), "memory-limit=16M");
        assert!(!Knob::MemoryLimit.is_global() && Knob::DentryNegative.is_global());
        let s = parse_setting("drop-caches-every=off,2m").unwrap();
        assert_eq!(s.values, vec![Value::Off, Value::Every(120.0)]);
        assert!(parse_setting("vm.vfs_cache_pressure=100,500").is_ok());
        for bad in [
            "fs.dentry-negative=2",
            "fs.dentry-negative",
            "vm.swappiness=1",
            "vm.vfs_cache_pressure=-1",
            "vm.vfs_cache_pressure=1e3",
            "vm.vfs_cache_pressure_denom=0",
            "drop-caches-every=0s",
            "drop-caches-every=soon",
            "fs.dentry-negative=0,0",
            "memory-limit=1M",
            "memory-limit=lots",
        ] {
            assert!(parse_setting(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn combinations_start_with_the_baseline() {
        let a = parse_setting("fs.dentry-negative=0,1").unwrap();
        let b = parse_setting("vm.vfs_cache_pressure=100,200,500").unwrap();
        let c = combinations(&[a, b]);
        assert_eq!(c.len(), 6);
        assert_eq!(label(&c[0]), "fs.dentry-negative=0 vm.vfs_cache_pressure=100");
        assert_eq!(label(&c[1]), "fs.dentry-negative=0 vm.vfs_cache_pressure=200");
        assert_eq!(label(&c[5]), "fs.dentry-negative=1 vm.vfs_cache_pressure=500");
        assert_eq!(combinations(&[]), vec![Vec::new()]);
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s"), Some(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("x"), None);
    }
}

/// A memory size: `512M`, `2G`, `300MiB`, or bytes (binary units).
pub(crate) fn parse_memory(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let bad = || format!("{s:?} is not a memory size (write for example 256M or 2G)");
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num.parse().map_err(|_| bad())?;
    let shift = match unit.trim().trim_end_matches("iB").trim_end_matches('B') {
        "" => 0,
        "k" | "K" => 10,
        "m" | "M" => 20,
        "g" | "G" => 30,
        "t" | "T" => 40,
        _ => return Err(bad()),
    };
    let b = v * (1u64 << shift) as f64;
    if !b.is_finite() || b < 1.0 || b > u64::MAX as f64 / 2.0 {
        return Err(bad());
    }
    Ok(b as u64)
}

#[cfg(test)]
mod memory_tests {
    #[test]
    fn sizes() {
        assert_eq!(super::parse_memory("256M"), Ok(256 << 20));
        assert_eq!(super::parse_memory("1.5G"), Ok(3 << 29));
        assert_eq!(super::parse_memory("2GiB"), Ok(2 << 30));
        assert!(super::parse_memory("lots").is_err());
        assert!(super::parse_memory("0").is_err());
    }
}
