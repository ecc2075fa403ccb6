//! Call stacks sampled on the reclaiming CPU, folded: which kernel code
//! held the CPU during a window (the longest gap the probe saw, or the
//! whole reclaim). Pure functions of `perf script` text and of two
//! timestamps on the same clock (CLOCK_MONOTONIC: perf records with
//! `-k CLOCK_MONOTONIC`, the probe reads the same clock).
//!
//! A folded stack is the flame-graph format: frames from the root (the
//! task's name) to the leaf, joined by `;`. Nothing is guessed: a frame
//! perf could not name stays `[unknown]`, and when no kernel frame has a
//! name at all the samples are refused (kernel symbols hidden).

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

pub(crate) use crate::probe::profile::SCRIPT_FIELDS;
/// Stacks kept per window.
pub(crate) const TOP_STACKS: usize = 5;
/// Name of a frame perf could not resolve.
pub(crate) const UNKNOWN: &str = "[unknown]";

/// One frame of a sampled stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Frame {
    pub symbol: String,
    pub kernel: bool,
}

/// One sample: when, which task, and its stack (leaf first, as perf prints).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sample {
    pub time_ns: u64,
    pub comm: String,
    /// -1 when perf never learnt which task it was (`:-1 -1`).
    pub tid: i64,
    pub frames: Vec<Frame>,
}

impl Sample {
    /// The folded form: `comm;root;…;leaf`.
    pub(crate) fn folded(&self) -> String {
        let mut s = clean(&self.comm);
        for f in self.frames.iter().rev() {
            s.push(';');
            s.push_str(&clean(&f.symbol));
        }
        s
    }
}

/// `;` separates frames and the last space separates the count: neither
/// may appear inside a name.
fn clean(name: &str) -> String {
    let n = name.trim().replace(';', ":");
    if n.is_empty() { UNKNOWN.to_string() } else { n }
}

/// `525.061797051` (seconds, 9 decimals from `--ns`) → ns, exactly.
fn parse_time_ns(t: &str) -> Option<u64> {
    let (s, frac) = t.split_once('.')?;
    if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac_ns: u64 = format!("{frac:0<9}").parse().ok()?;
    s.parse::<u64>().ok()?.checked_mul(1_000_000_000)?.checked_add(frac_ns)
}

/// The sample's first line: `comm tid time:` (a comm may hold spaces).
fn parse_header(line: &str) -> Option<(String, i64, u64)> {
    let line = line.trim_end();
    let body = line.strip_suffix(':')?;
    let (rest, time) = body.trim_end().rsplit_once(char::is_whitespace)?;
    let (comm, tid) = rest.trim_end().rsplit_once(char::is_whitespace)?;
    Some((comm.trim().to_string(), tid.parse().ok()?, parse_time_ns(time)?))
}

/// A frame line: `ffffffff816fb4a7 d_walk ([kernel.kallsyms])`.
fn parse_frame(line: &str) -> Option<Frame> {
    let line = line.trim();
    let (ip, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    u64::from_str_radix(ip, 16).ok()?;
    let rest = rest.trim();
    let (symbol, dso) = match rest.rfind(" (") {
        Some(i) if rest.ends_with(')') => (&rest[..i], &rest[i + 2..rest.len() - 1]),
        _ if rest.starts_with('(') && rest.ends_with(')') => ("", &rest[1..rest.len() - 1]),
        _ => (rest, ""),
    };
    Some(Frame { symbol: clean(symbol), kernel: is_kernel_dso(dso) })
}

/// `[kernel.kallsyms]`, or a module (`[ext4]`); not `[unknown]`, `[vdso]`.
fn is_kernel_dso(dso: &str) -> bool {
    dso.starts_with("[kernel")
        || (dso.starts_with('[')
            && dso.ends_with(']')
            && !matches!(dso, "[unknown]" | "[vdso]" | "[vsyscall]" | "[heap]" | "[stack]" | "[anon]"))
}

/// Parses `perf script -F comm,tid,time,ip,sym,dso --ns` output.
pub(crate) fn parse_script(text: &str) -> Result<Vec<Sample>> {
    let mut out: Vec<Sample> = Vec::new();
    let mut current: Option<Sample> = None;
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            out.extend(current.take());
            continue;
        }
        if line.starts_with(char::is_whitespace) {
            let Some(s) = current.as_mut() else { bail!("perf script line {}: a frame before any sample", n + 1) };
            match parse_frame(line) {
                Some(f) => s.frames.push(f),
                None => bail!("perf script line {}: not a frame (`ip symbol (dso)`): {:?}", n + 1, line.trim()),
            }
            continue;
        }
        out.extend(current.take());
        match parse_header(line) {
            Some((comm, tid, time_ns)) => current = Some(Sample { time_ns, comm, tid, frames: Vec::new() }),
            None => bail!(
                "perf script line {}: not a sample header (`comm tid seconds.nanoseconds:`, from -F {SCRIPT_FIELDS} --ns): {:?}",
                n + 1,
                line
            ),
        }
    }
    out.extend(current);
    Ok(out)
}

/// Why these samples cannot name kernel code, if they cannot: every
/// kernel frame is `[unknown]` (kallsyms hidden from perf).
pub(crate) fn unresolved_kernel(samples: &[Sample]) -> Option<String> {
    let kernel: Vec<&Frame> = samples.iter().flat_map(|s| &s.frames).filter(|f| f.kernel).collect();
    if !kernel.is_empty() && kernel.iter().all(|f| f.symbol == UNKNOWN) {
        return Some(format!(
            "perf could not name any of the {} kernel frames it sampled (kernel symbols hidden: see kernel.kptr_restrict)",
            kernel.len()
        ));
    }
    None
}

/// The samples taken in `[start_ns, end_ns]`.
pub(crate) fn in_window(samples: &[Sample], start_ns: u64, end_ns: u64) -> Vec<&Sample> {
    samples.iter().filter(|s| s.time_ns >= start_ns && s.time_ns <= end_ns).collect()
}

/// One folded stack and its share of a window's samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Stack {
    pub stack: String,
    pub samples: u64,
    pub share: f64,
}

/// The heaviest path: from the root, the frames that more than half of the
/// window's samples pass through, down to where they split.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Path {
    /// Root first (the task's name, then its outermost frame).
    pub frames: Vec<String>,
    pub samples: u64,
    pub share: f64,
}

impl Path {
    /// `callee ← caller`: the deepest frame and the one that called it.
    pub(crate) fn name(&self) -> String {
        let n = self.frames.len();
        match n {
            0 => "nothing".into(),
            1 => self.frames[0].clone(),
            _ => format!("{} ← {}", self.frames[n - 1], self.frames[n - 2]),
        }
    }
}

/// What held the CPU during one window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Window {
    pub start_ns: u64,
    pub end_ns: u64,
    /// Samples taken in the window (all tasks on the CPU).
    pub samples: u64,
    /// The top [`TOP_STACKS`] folded stacks, most samples first.
    pub stacks: Vec<Stack>,
    /// Every folded stack with its count (`stack count` lines), for flame graphs.
    pub folded: Vec<(String, u64)>,
    /// None when the window holds no sample.
    pub path: Option<Path>,
    /// The most specific call (caller → callee) in more than half of the
    /// window's samples, wherever it sits in their stacks: names what held
    /// the CPU when the stacks differ near the root (other tasks, softirqs
    /// run from interrupts or from ksoftirqd).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<Path>,
    /// Samples per task name (comm), most first: on a busy machine other
    /// tasks share the CPU during a gap.
    pub tasks: Vec<(String, u64)>,
    /// The same, counting only the task that ran the reclaim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reclaimer: Option<Reclaimer>,
}

/// The reclaiming task's samples within a window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Reclaimer {
    pub tid: u32,
    pub samples: u64,
    /// Its share of the window's samples.
    pub share: f64,
    /// Its heaviest path, shares of its own samples.
    pub path: Option<Path>,
    /// Its top stack, share of its own samples.
    pub top_stack: Option<Stack>,
}

impl Window {
    /// Share of the window's samples in its top stack.
    pub(crate) fn top_share(&self) -> f64 {
        self.stacks.first().map_or(0.0, |s| s.share)
    }
}

/// Folds `samples` into counts per stack, most samples first (ties by name).
pub(crate) fn fold<'a>(samples: impl IntoIterator<Item = &'a Sample>) -> Vec<(String, u64)> {
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for s in samples {
        *counts.entry(s.folded()).or_default() += 1;
    }
    let mut v: Vec<(String, u64)> = counts.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}

/// The heaviest path through folded stacks (see [`Path`]).
pub(crate) fn heaviest_path(folded: &[(String, u64)]) -> Option<Path> {
    let total: u64 = folded.iter().map(|(_, c)| c).sum();
    if total == 0 {
        return None;
    }
    let stacks: Vec<(Vec<&str>, u64)> = folded.iter().map(|(s, c)| (s.split(';').collect(), *c)).collect();
    let mut set: Vec<&(Vec<&str>, u64)> = stacks.iter().collect();
    let mut frames: Vec<String> = Vec::new();
    let mut samples = total;
    for depth in 0.. {
        let mut by_frame: BTreeMap<&str, u64> = BTreeMap::new();
        for (f, c) in &set {
            if let Some(name) = f.get(depth) {
                *by_frame.entry(name).or_default() += c;
            }
        }
        let Some((&name, &count)) = by_frame.iter().max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0))) else {
            break;
        };
        if count * 2 <= total {
            break;
        }
        frames.push(name.to_string());
        samples = count;
        set.retain(|(f, _)| f.get(depth) == Some(&name));
    }
    Some(Path { frames, samples, share: samples as f64 / total as f64 })
}

/// The most specific call in more than half of the samples: of the
/// caller → callee pairs, the one in fewest samples above half, the
/// deepest of those.
pub(crate) fn heaviest_call(folded: &[(String, u64)]) -> Option<Path> {
    let total: u64 = folded.iter().map(|(_, c)| c).sum();
    let mut calls: BTreeMap<(&str, &str), (u64, usize)> = BTreeMap::new();
    for (stack, c) in folded {
        let frames: Vec<&str> = stack.split(';').collect();
        let mut seen = std::collections::BTreeSet::new();
        for (depth, w) in frames.windows(2).enumerate() {
            if seen.insert((w[0], w[1])) {
                let e = calls.entry((w[0], w[1])).or_default();
                e.0 += c;
                e.1 = e.1.max(depth);
            }
        }
    }
    let ((caller, callee), (samples, _)) = calls
        .into_iter()
        .filter(|(_, (n, _))| n * 2 > total)
        .min_by(|a, b| a.1.0.cmp(&b.1.0).then_with(|| b.1.1.cmp(&a.1.1)).then_with(|| a.0.cmp(&b.0)))?;
    Some(Path { frames: vec![caller.to_string(), callee.to_string()], samples, share: samples as f64 / total as f64 })
}

/// What held the CPU between `start_ns` and `end_ns`, and what task `tid`
/// (the one running the reclaim) did then.
pub(crate) fn window(samples: &[Sample], start_ns: u64, end_ns: u64, tid: Option<u32>) -> Window {
    let mine = in_window(samples, start_ns, end_ns);
    let reclaimer = tid.map(|tid| {
        let its: Vec<&Sample> = mine.iter().copied().filter(|s| s.tid == i64::from(tid)).collect();
        let n = its.len() as u64;
        let f = fold(its);
        Reclaimer {
            tid,
            samples: n,
            share: if mine.is_empty() { 0.0 } else { n as f64 / mine.len() as f64 },
            path: heaviest_path(&f),
            top_stack: f.first().map(|(s, c)| Stack { stack: s.clone(), samples: *c, share: *c as f64 / n as f64 }),
        }
    });
    let folded = fold(mine);
    from_folded(start_ns, end_ns, folded, reclaimer)
}

/// A window from its folded stacks (most samples first).
fn from_folded(start_ns: u64, end_ns: u64, folded: Vec<(String, u64)>, reclaimer: Option<Reclaimer>) -> Window {
    let total: u64 = folded.iter().map(|(_, c)| c).sum();
    let share = |c: u64| if total == 0 { 0.0 } else { c as f64 / total as f64 };
    let stacks = folded
        .iter()
        .take(TOP_STACKS)
        .map(|(s, c)| Stack { stack: s.clone(), samples: *c, share: share(*c) })
        .collect();
    let path = heaviest_path(&folded);
    let call = heaviest_call(&folded);
    let mut by_task: BTreeMap<String, u64> = BTreeMap::new();
    for (stack, c) in &folded {
        *by_task.entry(stack.split(';').next().unwrap_or_default().to_string()).or_default() += c;
    }
    let mut tasks: Vec<(String, u64)> = by_task.into_iter().collect();
    tasks.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Window { start_ns, end_ns, samples: total, stacks, folded, path, call, tasks, reclaimer }
}

/// Several windows as one (their stacks added up): what held the CPU over
/// all of them, from the first start to the last end. No task is singled out.
pub(crate) fn combine<'a>(windows: impl IntoIterator<Item = &'a Window>) -> Window {
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let (mut start, mut end) = (u64::MAX, 0);
    for w in windows {
        start = start.min(w.start_ns);
        end = end.max(w.end_ns);
        for (s, c) in &w.folded {
            *counts.entry(s.clone()).or_default() += c;
        }
    }
    let mut folded: Vec<(String, u64)> = counts.into_iter().collect();
    folded.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    from_folded(start.min(end), end, folded, None)
}

/// A stack for people: its last `keep` frames, leaf first, `←` between.
pub(crate) fn short_stack(stack: &str, keep: usize) -> String {
    let frames: Vec<&str> = stack.split(';').collect();
    let n = frames.len();
    let mut out: Vec<&str> = frames.iter().rev().take(keep).copied().collect();
    if n > keep {
        out.push("…");
    }
    out.join(" ← ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: &str = "umount 10734   525.061797051: \n\
        \tffffffff816fb4a7 d_walk ([kernel.kallsyms])\n\
        \tffffffff816da378 kill_litter_super ([kernel.kallsyms])\n\
        \t          108b87 __GI___umount2 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n\
        \n\
        lto cgu.0 10651   525.062044495: \n\
        \t         8de29d5 (anonymous namespace)::SimplifyCFGOpt::simplifyCondBranch (/usr/lib/llvm/libLLVM.so)\n\
        \t    7f664d808700 [unknown] ([unknown])\n";

    #[test]
    fn parses_headers_and_frames() {
        let s = parse_script(ONE).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].comm.as_str(), s[0].tid, s[0].time_ns), ("umount", 10734, 525_061_797_051));
        assert_eq!(s[0].frames[0], Frame { symbol: "d_walk".into(), kernel: true });
        assert!(!s[0].frames[2].kernel);
        assert_eq!(s[0].folded(), "umount;__GI___umount2;kill_litter_super;d_walk");
        assert_eq!(s[1].comm, "lto cgu.0");
        assert_eq!(s[1].frames[0].symbol, "(anonymous namespace)::SimplifyCFGOpt::simplifyCondBranch");
        assert_eq!(s[1].frames[1], Frame { symbol: UNKNOWN.into(), kernel: false });
        // A task perf never learnt the name of (seen on 6.18 with perf 6.1).
        let s = parse_script(":-1    -1  3142.640149586: \n\tffffffff816fb4a7 d_walk ([kernel.kallsyms])\n").unwrap();
        assert_eq!((s[0].comm.as_str(), s[0].tid, s[0].folded().as_str()), (":-1", -1, ":-1;d_walk"));
    }

    #[test]
    fn bad_lines_are_named() {
        let e = parse_script("umount 1 notatime:\n").unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("header"), "{e}");
        let e = parse_script("\tffff d_walk ([kernel.kallsyms])\n").unwrap_err().to_string();
        assert!(e.contains("before any sample"), "{e}");
        let e = parse_script("a 1 1.5:\n\tzz d_walk\n").unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("not a frame"), "{e}");
        assert_eq!(parse_time_ns("1.5"), Some(1_500_000_000));
        assert_eq!(parse_time_ns("1.0000000001"), None);
    }

    #[test]
    fn hidden_kernel_symbols_are_refused() {
        let t =
            "umount 1 1.000000001:\n\tffffffff816fb4a7 [unknown] ([kernel.kallsyms])\n\t108b87 umount2 (libc.so.6)\n";
        let s = parse_script(t).unwrap();
        assert!(unresolved_kernel(&s).unwrap().contains("kptr_restrict"));
        assert!(unresolved_kernel(&parse_script(ONE).unwrap()).is_none());
    }

    fn folded(lines: &[(&str, u64)]) -> Vec<(String, u64)> {
        lines.iter().map(|(s, c)| (s.to_string(), *c)).collect()
    }

    #[test]
    fn heaviest_path_stops_where_the_samples_split() {
        let f = folded(&[
            ("umount;sys;kill_litter_super;d_walk", 60),
            ("umount;sys;kill_litter_super;d_walk;_raw_spin_lock", 30),
            ("umount;sys;shrink_dcache_parent;d_walk", 7),
            ("kworker;worker_thread", 3),
        ]);
        let p = heaviest_path(&f).unwrap();
        assert_eq!(p.frames, ["umount", "sys", "kill_litter_super", "d_walk"]);
        assert_eq!(p.samples, 90);
        assert!((p.share - 0.9).abs() < 1e-12);
        assert_eq!(p.name(), "d_walk ← kill_litter_super");
        // No majority below the root: the path is the root alone, or nothing.
        let even = folded(&[("a;x", 50), ("b;y", 50)]);
        assert_eq!(heaviest_path(&even).unwrap().frames, Vec::<String>::new());
        assert_eq!(heaviest_path(&even).unwrap().name(), "nothing");
        assert!(heaviest_path(&[]).is_none());
    }

    /// The recorded umount of 300k hard links on tmpfs (6.18) and the
    /// probe's longest gap during it (see tests/fixtures/perf/6.18/README.md).
    fn fixture() -> (Vec<Sample>, u64, u64) {
        use std::io::Read;
        let dir = format!("{}/tests/fixtures/perf/6.18", env!("CARGO_MANIFEST_DIR"));
        let gz = std::fs::File::open(format!("{dir}/umount-tmpfs-300k.script.gz")).unwrap();
        let mut text = String::new();
        flate2::read::GzDecoder::new(gz).read_to_string(&mut text).unwrap();
        let gap = std::fs::read_to_string(format!("{dir}/umount-tmpfs-300k.gap")).unwrap();
        let longest: Vec<u64> = gap
            .lines()
            .find_map(|l| l.strip_prefix("longest "))
            .unwrap()
            .split(' ')
            .map(|x| x.parse().unwrap())
            .collect();
        (parse_script(&text).unwrap(), longest[0], longest[1])
    }

    fn is_genocide(s: &Sample) -> bool {
        s.frames.windows(2).any(|w| w[0].symbol == "d_walk" && w[1].symbol == "kill_litter_super")
    }

    #[test]
    fn fixture_longest_gap_is_the_genocide_walk() {
        let (samples, start, end) = fixture();
        assert_eq!(samples.len(), 880);
        assert!(unresolved_kernel(&samples).is_none());
        let w = window(&samples, start, end, None);
        // 79 umount samples and 33 of another task's (the machine was loaded).
        assert_eq!(w.samples, 112);
        assert_eq!(in_window(&samples, start, end).iter().filter(|s| s.comm == "umount").count(), 79);
        let p = w.path.as_ref().unwrap();
        assert_eq!(p.name(), "d_walk ← kill_litter_super");
        assert_eq!(p.frames[0], "umount");
        assert_eq!(p.samples, 79);
        let c = w.call.as_ref().unwrap();
        assert_eq!((c.name(), c.samples), ("d_walk ← kill_litter_super".to_string(), 79));
        assert_eq!(
            w.stacks[0],
            Stack {
                stack: "umount;__GI___umount2;entry_SYSCALL_64_after_hwframe;do_syscall_64;exit_to_user_mode_loop;\
                        task_work_run;cleanup_mnt;deactivate_locked_super;kill_litter_super;d_walk"
                    .into(),
                samples: 51,
                share: 51.0 / 112.0,
            }
        );
        assert_eq!(w.stacks.len(), TOP_STACKS);
        assert!(w.stacks.windows(2).all(|s| s[0].samples >= s[1].samples));
        assert_eq!(w.folded.iter().map(|(_, c)| c).sum::<u64>(), 112);
        assert_eq!(w.tasks, [("umount".to_string(), 79), ("lto cgu.00".to_string(), 33)]);
        assert!(w.reclaimer.is_none());
        // Counting only the umount's own samples: all of them are the walk.
        let tid = samples.iter().find(|s| s.comm == "umount").unwrap().tid as u32;
        let r = window(&samples, start, end, Some(tid)).reclaimer.unwrap();
        assert_eq!((r.tid, r.samples), (tid, 79));
        assert!((r.share - 79.0 / 112.0).abs() < 1e-12);
        let p = r.path.unwrap();
        assert_eq!((p.name(), p.samples, p.share), ("d_walk ← kill_litter_super".to_string(), 79, 1.0));
        assert_eq!(r.top_stack.unwrap().samples, 51);
        assert_eq!(window(&samples, start, end, Some(1)).reclaimer.unwrap().samples, 0);
        // The clocks agree: every sample of the walk that never reschedules
        // lies inside the probe's longest gap, and nothing else of umount's.
        let genocide: Vec<&Sample> = samples.iter().filter(|s| is_genocide(s)).collect();
        assert_eq!(genocide.len(), 79);
        assert!(genocide.iter().all(|s| s.time_ns >= start && s.time_ns <= end));
    }

    #[test]
    fn fixture_whole_umount_is_mostly_the_shrink() {
        let (samples, _, _) = fixture();
        let umount: Vec<u64> = samples.iter().filter(|s| s.comm == "umount").map(|s| s.time_ns).collect();
        let (first, last) = (*umount.iter().min().unwrap(), *umount.iter().max().unwrap());
        let w = window(&samples, first, last, None);
        assert!(w.samples >= 726 && w.samples <= 880);
        let p = w.path.unwrap();
        assert!(p.frames.iter().any(|f| f == "shrink_dcache_for_umount"), "{:?}", p.frames);
        assert!(w.stacks.iter().all(|s| s.stack.starts_with("umount;")));
        // A window with no sample has no path.
        let empty = window(&samples, 1, 2, None);
        assert_eq!((empty.samples, empty.path.clone(), empty.top_share()), (0, None, 0.0));
    }

    #[test]
    fn combined_windows_add_their_stacks() {
        let (samples, start, end) = fixture();
        let mid = start + (end - start) / 2;
        let (a, b) = (window(&samples, start, mid, None), window(&samples, mid + 1, end, None));
        let both = combine([&a, &b]);
        let whole = window(&samples, start, end, None);
        assert_eq!((both.start_ns, both.end_ns), (start, end));
        assert_eq!(both.samples, a.samples + b.samples);
        assert_eq!(both.samples, whole.samples);
        assert_eq!(both.folded, whole.folded);
        assert_eq!(both.stacks, whole.stacks);
        assert_eq!(both.path, whole.path);
        assert_eq!(both.tasks, whole.tasks);
        assert!(both.reclaimer.is_none());
        let none = combine(std::iter::empty());
        assert_eq!((none.samples, none.path), (0, None));
    }

    #[test]
    fn heaviest_call_finds_softirq_work_under_different_roots() {
        let f = folded(&[
            ("ksoftirqd/0;ret_from_fork;run_ksoftirqd;handle_softirqs;rcu_core;rcu_do_batch;kmem_cache_free", 30),
            ("cc1;asm_sysvec_apic_timer_interrupt;handle_softirqs;rcu_core;rcu_do_batch", 25),
            ("dentrylab;umount;shrink_dentry_list", 20),
            ("cc1;main", 25),
        ]);
        // No path from the root holds a majority; the call does.
        assert_eq!(heaviest_path(&f).unwrap().frames, Vec::<String>::new());
        let c = heaviest_call(&f).unwrap();
        assert_eq!((c.name(), c.samples), ("rcu_do_batch ← rcu_core".to_string(), 55));
        assert!(heaviest_call(&folded(&[("a;b", 1), ("c;d", 1)])).is_none());
    }

    #[test]
    fn short_stacks_read_leaf_first() {
        assert_eq!(short_stack("umount;a;b;c", 2), "c ← b ← …");
        assert_eq!(short_stack("umount;a", 5), "a ← umount");
    }
}
