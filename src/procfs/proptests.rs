//! Property tests of every parser here: arbitrary bytes never panic one
//! (they give a value or an error), and what the kernel would print for any
//! values parses back to those values. Thousands of cases each, on small
//! inputs, so the whole file runs in well under a second.

use proptest::prelude::*;

use super::{cgroup, dentry_state, kmsg, meminfo, slabinfo};

const CASES: u32 = 4096;

/// Bytes shaped like a proc file: mostly digits, separators and letters,
/// sometimes anything.
fn proc_bytes() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        4 => prop::sample::select(b"0123456789 \t\n:-,;/\\[]#kBMemTotalAvailableslabinfo - version: 2.1".to_vec()),
        1 => any::<u8>(),
    ];
    prop::collection::vec(byte, 0..400)
}

// The kernel prints no carriage return in these files (/dev/kmsg escapes
// control characters as \xHH); the generators leave it out, as
// `BufRead::lines` would take a trailing one for a line ending.

/// A name as the kernel prints one: no whitespace, no newline.
fn word() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_.=+-]{1,20}"
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn no_parser_panics_on_arbitrary_bytes(b in proc_bytes()) {
        let _ = dentry_state::parse(&b[..]);
        let _ = meminfo::parse(&b[..]);
        let _ = slabinfo::find(&b[..], "dentry");
        let _ = cgroup::parse_membership(&b[..]);
        let _ = cgroup::parse_mounts(&b[..]);
        let text = String::from_utf8_lossy(&b);
        for line in text.split('\n') {
            if let Some(r) = kmsg::parse_record(line) {
                let _ = kmsg::classify(&r);
            }
        }
    }

    #[test]
    fn dentry_state_round_trips(v in any::<[u64; 5]>(), dummy in any::<u64>()) {
        let text = format!("{}\t{}\t{}\t{}\t{}\t{dummy}\n", v[0], v[1], v[2], v[3], v[4]);
        let s = dentry_state::parse(text.as_bytes()).unwrap();
        prop_assert_eq!([s.nr_dentry, s.nr_unused, s.age_limit, s.want_pages, s.nr_negative], v);
    }

    #[test]
    fn meminfo_round_trips(v in any::<[u32; 5]>(), other in any::<u32>()) {
        let kb = v.map(u64::from);
        let text = format!(
            "MemTotal:       {} kB\nMemFree:        {other} kB\nMemAvailable:   {} kB\nSlab:           {} kB\n\
             SReclaimable:   {} kB\nShmem:          {} kB\nHugePages_Total:   {other}\n",
            kb[0], kb[1], kb[2], kb[3], kb[4]
        );
        let m = meminfo::parse(text.as_bytes()).unwrap();
        prop_assert_eq!(
            [m.mem_total_bytes, m.mem_available_bytes, m.slab_bytes, m.s_reclaimable_bytes, m.shmem_bytes],
            kb.map(|k| k * 1024)
        );
    }

    #[test]
    fn meminfo_overflow_is_an_error(kb in (u64::MAX / 1024 + 1)..=u64::MAX) {
        let text = format!("MemTotal: {kb} kB\nMemAvailable: 1 kB\n");
        prop_assert!(meminfo::parse(text.as_bytes()).is_err());
    }

    #[test]
    fn slabinfo_round_trips(name in word(), v in any::<[u64; 5]>(), others in prop::collection::vec(word(), 0..5)) {
        let mut text = String::from("slabinfo - version: 2.1\n# name <active_objs> ...\n");
        for o in others.iter().filter(|o| **o != name) {
            text += &format!("{o:<17} 1 2 3 4 5 : tunables 0 0 0 : slabdata 1 1 0\n");
        }
        text += &format!("{name:<17} {} {} {} {} {} : tunables 0 0 0 : slabdata 9 9 0\n", v[0], v[1], v[2], v[3], v[4]);
        let c = slabinfo::find(text.as_bytes(), &name).unwrap().unwrap();
        prop_assert_eq!(c.name, name);
        prop_assert_eq!([c.active_objs, c.num_objs, c.objsize_bytes, c.objperslab, c.pagesperslab], v);
    }

    #[test]
    fn cgroup_membership_round_trips(
        lines in prop::collection::vec((any::<u32>(), prop::collection::vec("[a-z_]{1,10}(=[a-z]{1,6})?", 0..4), "/[^\n\r]{0,40}"), 0..8)
    ) {
        let text: String = lines.iter().map(|(id, ctl, path)| format!("{id}:{}:{path}\n", ctl.join(","))).collect();
        let got = cgroup::parse_membership(text.as_bytes()).unwrap();
        prop_assert_eq!(got.len(), lines.len());
        for (g, (id, ctl, path)) in got.iter().zip(&lines) {
            prop_assert_eq!(g.hierarchy, *id);
            prop_assert_eq!(&g.controllers, ctl);
            prop_assert_eq!(&g.path, path);
        }
    }

    /// The kernel escapes space, tab, newline and backslash in mountinfo as
    /// `\ooo`: any mount point and root come back unescaped.
    #[test]
    fn cgroup_mounts_round_trip(
        mount in "/[a-z \t\n\\\\]{0,20}", root in "/[a-z \\\\]{0,10}", v2 in any::<bool>(), opts in prop::collection::vec("[a-z]{1,8}", 1..4)
    ) {
        let esc = |s: &str| s.chars().map(|c| match c {
            ' ' | '\t' | '\n' | '\\' => format!("\\{:03o}", c as u32),
            c => c.to_string(),
        }).collect::<String>();
        let fs = if v2 { "cgroup2" } else { "cgroup" };
        let text = format!(
            "30 24 0:26 / /proc rw - proc proc rw\n31 25 0:27 {} {} rw,nosuid shared:9 - {fs} cgroup rw,{}\n",
            esc(&root), esc(&mount), opts.join(",")
        );
        let got = cgroup::parse_mounts(text.as_bytes()).unwrap();
        prop_assert_eq!(got.len(), 1);
        prop_assert_eq!(got[0].version, if v2 { 2 } else { 1 });
        prop_assert_eq!(got[0].mount_point.to_str().unwrap(), mount.as_str());
        prop_assert_eq!(&got[0].root, &root);
        prop_assert_eq!(&got[0].options[1..], &opts[..]);
    }

    #[test]
    fn kmsg_records_round_trip(prio in 0u32..192, seq in any::<u64>(), usec in any::<u64>(), msg in "[^\n\r]{0,80}") {
        let raw = format!("{prio},{seq},{usec},-;{msg}\n SUBSYSTEM=cpu\n");
        let r = kmsg::parse_record(&raw).unwrap();
        prop_assert_eq!(r.level as u32, prio & 7);
        prop_assert_eq!((r.seq, r.usec), (seq, usec));
        prop_assert_eq!(r.message, msg);
    }

    #[test]
    fn soft_lockups_round_trip(cpu in any::<u32>(), stuck in any::<u64>(), task in "[a-z0-9_/:.-]{1,15}", pid in any::<u32>()) {
        let msg = format!("watchdog: BUG: soft lockup - CPU#{cpu} stuck for {stuck}s! [{task}:{pid}]");
        let r = kmsg::parse_record(&format!("0,1,2,-;{msg}")).unwrap();
        let a = kmsg::classify(&r).unwrap();
        prop_assert_eq!(a.kind, kmsg::Kind::SoftLockup);
        prop_assert_eq!((a.cpu, a.stuck_seconds, a.pid), (Some(cpu), Some(stuck), Some(pid)));
        prop_assert_eq!(a.task, Some(task));
    }
}
