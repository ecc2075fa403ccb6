//! `vm --kernel-source … --patch …`: kernels built here from source, on a
//! tiny fake source tree (a Makefile whose `bzImage` target copies a file),
//! never a real kernel: the patched kernel and its unpatched baseline are
//! built from the same source and configuration, cached by (source,
//! patches, configuration) and told apart by their release; a patch that
//! does not apply, a failing build and a configuration line the tree's
//! `olddefconfig` drops are one line each (exit 1) and leave nothing
//! behind; bad flags are exit 2; a run killed mid-build leaves no make,
//! sub-make or compiler running (issue 41).

mod common;

use std::path::{Path, PathBuf};

use common::{bin, has, usage_error};

/// The targets dentrylab's build calls, as a kernel tree has them:
/// `allnoconfig` writes a `.config`, `olddefconfig` drops one option (as
/// Kconfig drops an option whose dependencies are unmet), `bzImage` fails
/// like a compiler when hello.c holds BROKEN, starts a sub-make that
/// sleeps (its pid in `$FAKE_KERNEL_NAP`) when it holds NAP, else "builds"
/// the image from hello.c, the `.config` and the compiler make was given.
const MAKEFILE: &str = "\
allnoconfig:
\tprintf 'CONFIG_FAKE_BASE=y\\nCONFIG_LOCALVERSION=\"\"\\n' > .config
olddefconfig:
\tgrep -v '^CONFIG_FAKE_DROPPED=' .config > .config.new; mv .config.new .config
kernelrelease:
\t@echo \"1.2.3$$(sed -n 's/^CONFIG_LOCALVERSION=\"\\(.*\\)\"$$/\\1/p' .config)\"
bzImage:
\t@if grep -q BROKEN hello.c; then echo 'hello.c:1:30: error: expected identifier before BROKEN' >&2; exit 1; fi
\t@if grep -q NAP hello.c; then $(MAKE) nap; fi
\tmkdir -p arch/x86/boot
\tcat hello.c .config > arch/x86/boot/bzImage
\techo \"compiler: $(CC) $${CCACHE_NOHASHDIR:-hashdir} $${CCACHE_SLOPPINESS:-strict}\" >> arch/x86/boot/bzImage
headers:
\tmkdir -p usr/include && touch usr/include/fake.h
nap:
\t@echo $$$$ > \"$$FAKE_KERNEL_NAP.tmp\"; mv \"$$FAKE_KERNEL_NAP.tmp\" \"$$FAKE_KERNEL_NAP\"; exec sleep 300
.PHONY: allnoconfig olddefconfig kernelrelease bzImage headers nap
";

/// `tools/testing/selftests/Makefile` of the fake tree: `install` copies
/// each target's files and the tree's hello.c (to show which patches the
/// selftests were built with) under INSTALL_PATH and lists them, as the
/// kernel's does, leaving `*.gen` unlisted (as `TEST_GEN_FILES` are); a
/// target holding BROKEN fails like a compiler and installs nothing, and
/// the make goes on, as the kernel's loop does.
const SELFTESTS_MAKEFILE: &str = "\
install:
\t@for t in $(TARGETS); do \\
\t  if [ -f $$t/BROKEN ]; then echo \"$$t/x.c:3:1: error: unknown type name 'nope'\" >&2; continue; fi; \\
\t  mkdir -p $(INSTALL_PATH)/$$t && cp $$t/* ../../../hello.c $(INSTALL_PATH)/$$t/ && \\
\t  for f in $$t/*; do case $$f in *.gen) ;; *) echo \"$$t:$${f##*/}\" >> $(INSTALL_PATH)/kselftest-list.txt;; esac; done; \\
\tdone
";

const HELLO: &str = "int main(void) { return 0; }\n";

fn patch(from: &str, to: &str) -> String {
    format!("--- a/hello.c\n+++ b/hello.c\n@@ -1 +1 @@\n-{from}\n+{to}\n")
}

struct Fake {
    dir: tempfile::TempDir,
}

impl Fake {
    fn new() -> Fake {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/Makefile"), MAKEFILE).unwrap();
        std::fs::write(dir.path().join("src/hello.c"), HELLO).unwrap();
        let st = dir.path().join("src/tools/testing/selftests");
        for t in ["mount", "broken", "gen"] {
            std::fs::create_dir_all(st.join(t)).unwrap();
        }
        std::fs::write(st.join("Makefile"), SELFTESTS_MAKEFILE).unwrap();
        std::fs::write(st.join("mount/t.sh"), "#!/bin/sh\necho 'ok 1 fake'\n").unwrap();
        std::fs::write(st.join("broken/BROKEN"), "").unwrap();
        std::fs::write(st.join("gen/prog.gen"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(st.join("gen/prog.gen"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        std::fs::write(st.join("gen/data.gen"), "not a program\n").unwrap();
        let p = |name: &str, text: String| std::fs::write(dir.path().join(name), text).unwrap();
        p("good.patch", patch("int main(void) { return 0; }", "int main(void) { return 1; }"));
        p("bad.patch", patch("int main(void) { return 7; }", "int main(void) { return 8; }"));
        p("broken.patch", patch("int main(void) { return 0; }", "int main(void) { return 0; } BROKEN"));
        p("nap.patch", patch("int main(void) { return 0; }", "int main(void) { return 0; } /* NAP */"));
        p("extra.config", "CONFIG_FAKE_EXTRA=y\n".into());
        p("dropped.config", "CONFIG_FAKE_DROPPED=y\n".into());
        Fake { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `vm --kernel-source SRC --build-only --state-dir STATE ARGS…`.
    fn command(&self, args: &[&str]) -> std::process::Command {
        let mut c = bin();
        c.args(["vm", "--kernel-source"])
            .arg(self.path("src"))
            .args(["--build-only", "--build-jobs", "1", "--state-dir"])
            .arg(self.path("state"))
            .args(args);
        c
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        self.command(args).output().unwrap()
    }

    fn built(&self, args: &[&str]) -> Vec<serde_json::Value> {
        self.built_all(args)["kernels"].as_array().unwrap().clone()
    }

    /// `--build-only --json`'s whole document.
    fn built_all(&self, args: &[&str]) -> serde_json::Value {
        let json = self.path("built.json");
        let out = self.run(&[args, &["--json", json.to_str().unwrap()]].concat());
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(v["schema"], "dentrylab.vm-built/1");
        v
    }

    /// Nothing of a build is left: no partial directory, no cached build.
    fn assert_nothing_built(&self) {
        let vm = self.path("state/vm");
        let built = vm.join("built");
        let n = std::fs::read_dir(&built).map(|d| d.count()).unwrap_or(0);
        assert_eq!(n, 0, "{} holds a build", built.display());
        assert_no_partial(&vm);
    }
}

fn assert_no_partial(vm: &Path) {
    let partial: Vec<_> = std::fs::read_dir(vm.join("kernels"))
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(partial.is_empty(), "left behind: {partial:?}");
}

/// The one error line of a failed run (exit 1), with no cause lines.
fn one_error_line(out: &std::process::Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.starts_with("dentrylab vm: ")).collect();
    assert_eq!(lines.len(), 1, "one line: {err}");
    lines[0].to_string()
}

macro_rules! require_build_tools {
    () => {
        for t in ["make", "patch", "tar", "cp"] {
            require!(has(t), "needs {t} (see .ci/run for its package)");
        }
    };
}

#[test]
fn a_patched_kernel_and_its_baseline_are_built_cached_and_told_apart() {
    require_build_tools!();
    let f = Fake::new();
    let good = f.path("good.patch");
    let first = f.built(&["--patch", good.to_str().unwrap()]);
    assert_eq!(first.len(), 2, "{first:?}");
    let (base, patched) = (&first[0], &first[1]);
    assert_eq!(base["patches"], serde_json::json!([]));
    assert_eq!(patched["patches"][0]["name"], "good.patch");
    assert_ne!(base["key"], patched["key"]);
    // The baseline is the patched kernel's tree with the patch reversed.
    assert_eq!((&base["rebuilt_from"], &patched["rebuilt_from"]), (&patched["key"], &serde_json::Value::Null));
    for k in &first {
        assert_eq!(k["cached"], false, "{k}");
        let key = k["key"].as_str().unwrap();
        // The release names the build, so that the guest's uname -r tells them apart.
        assert_eq!(k["release"].as_str().unwrap(), format!("1.2.3-dentrylab-{}", &key[..8]));
        let image = std::fs::read_to_string(k["image"].as_str().unwrap()).unwrap();
        // The project's fragment merged onto defconfig's .config, for both.
        assert!(image.contains("CONFIG_FAKE_BASE=y") && image.contains("CONFIG_PROC_KCORE=y"), "{image}");
        assert!(image.contains("# CONFIG_MODULES is not set"), "{image}");
    }
    let image = |k: &serde_json::Value| std::fs::read_to_string(k["image"].as_str().unwrap()).unwrap();
    assert!(image(base).contains("return 0;") && image(patched).contains("return 1;"));
    // The source tree itself is never changed.
    assert_eq!(std::fs::read_to_string(f.path("src/hello.c")).unwrap(), HELLO);
    assert_no_partial(&f.path("state/vm"));

    // The same source, patches and configuration: both from the cache.
    let again = f.built(&["--patch", good.to_str().unwrap()]);
    for (a, b) in again.iter().zip(&first) {
        assert_eq!((a["cached"].as_bool(), &a["key"]), (Some(true), &b["key"]), "{a}");
    }
    // Another configuration line: both built anew, under new keys.
    let extra = f.path("extra.config");
    let other = f.built(&["--patch", good.to_str().unwrap(), "--kernel-config", extra.to_str().unwrap()]);
    for (a, b) in other.iter().zip(&first) {
        assert_eq!(a["cached"], false, "{a}");
        assert_ne!(a["key"], b["key"]);
        assert!(image(a).contains("CONFIG_FAKE_EXTRA=y"));
    }
    // Without patches: the baseline alone, from the cache.
    let alone = f.built(&[]);
    assert_eq!(alone.len(), 1);
    assert_eq!((alone[0]["cached"].as_bool(), &alone[0]["key"]), (Some(true), &base["key"]));
}

/// With ccache on the PATH, the build compiles through it, with the
/// settings that let builds in different directories share objects;
/// `DENTRYLAB_NO_CCACHE` turns it off.
#[test]
fn a_build_goes_through_ccache_when_it_is_installed() {
    use std::os::unix::fs::PermissionsExt;
    require_build_tools!();
    let f = Fake::new();
    let bin_dir = f.path("bin");
    std::fs::create_dir(&bin_dir).unwrap();
    let ccache = bin_dir.join("ccache");
    std::fs::write(&ccache, "#!/bin/sh\nexec \"$@\"\n").unwrap();
    std::fs::set_permissions(&ccache, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let image = |env: &[(&str, &str)], state: &str| {
        let json = f.path(&format!("{state}.json"));
        let mut c = bin();
        c.args(["vm", "--kernel-source"]).arg(f.path("src"));
        c.args(["--build-only", "--build-jobs", "1", "--state-dir"]).arg(f.path(state));
        c.arg("--json").arg(&json).env("PATH", &path).env_remove("DENTRYLAB_NO_CCACHE");
        let out = c.envs(env.iter().copied()).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        std::fs::read_to_string(v["kernels"][0]["image"].as_str().unwrap()).unwrap()
    };
    let through = image(&[], "with");
    assert!(through.contains("compiler: ccache gcc true include_file_mtime,include_file_ctime"), "{through}");
    let without = image(&[("DENTRYLAB_NO_CCACHE", "1")], "without");
    assert!(without.contains("compiler: cc hashdir strict"), "{without}");
}

#[test]
fn selftests_are_built_from_the_patched_source_once_and_a_missing_one_is_one_line() {
    require_build_tools!();
    let f = Fake::new();
    let good = f.path("good.patch");
    let args = ["--patch", good.to_str().unwrap(), "--selftests", "mount,gen"];
    let v = f.built_all(&args);
    let dir = PathBuf::from(v["selftests"].as_str().expect("the selftests' directory"));
    let list = std::fs::read_to_string(dir.join("kselftest-list.txt")).unwrap();
    // gen's program was installed unlisted: it is listed, its data file not.
    assert_eq!(list.lines().collect::<Vec<_>>(), ["mount:t.sh", "gen:prog.gen"], "{list}");
    assert!(dir.join("mount/t.sh").is_file());
    let hello = std::fs::read_to_string(dir.join("mount/hello.c")).unwrap();
    assert!(hello.contains("return 1"), "built without the patch: {hello}");
    let again = f.run(&args);
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success() && err.contains("selftests mount gen: built before, from the cache"), "{err}");
    assert_no_partial(&f.path("state/vm"));

    let broken = one_error_line(&f.run(&["--selftests", "mount,broken"]));
    assert!(
        broken.contains("--selftests broken: no test of it was installed")
            && broken.contains("x.c:3:1: error: unknown type name"),
        "{broken}"
    );
    let missing = f.run(&["--selftests", "nothing_here"]);
    let err = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(missing.status.code(), Some(2), "{err}");
    assert!(err.contains("--selftests nothing_here: this source has no such directory"), "{err}");
    assert_no_partial(&f.path("state/vm"));
}

#[test]
fn a_patch_that_does_not_apply_is_one_line_naming_its_hunk_and_nothing_is_left() {
    require_build_tools!();
    let f = Fake::new();
    let out = f.run(&["--patch", f.path("good.patch").to_str().unwrap(), f.path("bad.patch").to_str().unwrap()]);
    let line = one_error_line(&out);
    assert!(line.contains("bad.patch") && line.contains("hello.c") && line.contains("Hunk #1 FAILED"), "{line}");
    f.assert_nothing_built();
}

#[test]
fn a_failing_build_is_the_compilers_first_error_and_only_its_log_is_kept() {
    require_build_tools!();
    let f = Fake::new();
    let logs = f.path("logs");
    let out = f.run(&["--patch", f.path("broken.patch").to_str().unwrap(), "--logs", logs.to_str().unwrap()]);
    let line = one_error_line(&out);
    assert!(
        line.contains("make bzImage failed") && line.contains("hello.c:1:30: error: expected identifier"),
        "{line}"
    );
    f.assert_nothing_built();
    // With --logs, the failed build's log stays there, and only there.
    let kept: Vec<_> = std::fs::read_dir(&logs).unwrap().filter_map(|e| e.ok()).collect();
    assert_eq!(kept.len(), 1);
    assert!(std::fs::read_to_string(kept[0].path()).unwrap().contains("error: expected identifier"));
}

#[test]
fn a_configuration_line_the_tree_drops_is_named() {
    require_build_tools!();
    let f = Fake::new();
    let out = f.run(&["--kernel-config", f.path("dropped.config").to_str().unwrap()]);
    let line = one_error_line(&out);
    assert!(line.contains("`CONFIG_FAKE_DROPPED=y`") && line.contains("dropped.config"), "{line}");
    f.assert_nothing_built();
}

#[test]
fn bad_source_patch_and_config_flags_are_one_line_and_exit_2() {
    let f = Fake::new();
    let src = f.path("src");
    let src = src.to_str().unwrap();
    usage_error("vm", &["--patch", "x.patch", "--kernel", "host", "--", "reclaim"], &["--kernel-source"]);
    usage_error("vm", &["--kernel-source", "7.3", "--build-only"], &["7.3", "linux-source-X"]);
    let missing = f.path("missing.patch");
    usage_error(
        "vm",
        &["--kernel-source", src, "--build-only", "--patch", missing.to_str().unwrap()],
        &["--patch", "missing.patch", "cannot read it"],
    );
    usage_error(
        "vm",
        &["--kernel-source", src, "--build-only", "--patch", f.path("extra.config").to_str().unwrap()],
        &["--patch", "not a unified diff"],
    );
    std::fs::write(f.path("bad.config"), "CONFIG_A=y\nnot a line\n").unwrap();
    usage_error(
        "vm",
        &["--kernel-source", src, "--build-only", "--kernel-config", f.path("bad.config").to_str().unwrap()],
        &["line 2", "not a line"],
    );
    let empty = tempfile::tempdir().unwrap();
    usage_error("vm", &["--kernel-source", empty.path().to_str().unwrap(), "--build-only"], &["no Makefile"]);
    usage_error("vm", &["--kernel-source", src, "--build-only", "--selftests", "../up"], &["../up", "selftest target"]);
    usage_error("vm", &["--kernel", "host", "--selftests", "mount", "--", "reclaim"], &["--kernel-source"]);
    // Without --build-only, a command to run is still needed.
    usage_error("vm", &["--kernel-source", src], &["COMMAND"]);
}

#[test]
fn vm_help_names_the_source_and_patch_options() {
    let out = bin().args(["vm", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for o in ["--kernel-source", "--patch", "--kernel-config", "--build-jobs", "--build-only"] {
        assert!(help.contains(o), "{o} missing from vm --help");
    }
}

/// The processes of process group `pgid` still running (zombies left out),
/// read from /proc. A witness on purpose: the test reads the kernel itself.
fn group_members(pgid: u32) -> Vec<u32> {
    let mut live = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()) {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let Some(close) = stat.rfind(')') else { continue };
        let f: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        if f.len() > 2 && f[2].parse() == Ok(pgid) && !matches!(f[0], "Z" | "X") {
            live.push(pid);
        }
    }
    live
}

/// Issue 41: dentrylab killed (SIGKILL) while `make bzImage` runs a
/// sub-make: make, the sub-make and what it runs are all gone, and so is
/// the partial build. Before the build had a process group of its own,
/// PR_SET_PDEATHSIG took only the top make and the sub-make ran on.
#[test]
fn a_build_killed_midway_leaves_no_make_running() {
    require_build_tools!();
    let f = Fake::new();
    let nap = f.path("nap.pid");
    let mut run = f
        .command(&["--patch", f.path("nap.patch").to_str().unwrap()])
        .env("FAKE_KERNEL_NAP", &nap)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let limit = std::time::Duration::from_secs(120);
    common::wait_until("the fake build never reached its sub-make", limit, || nap.is_file());
    let sleeper: u32 = std::fs::read_to_string(&nap).unwrap().trim().parse().unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{sleeper}/stat")).unwrap();
    let pgid: u32 = stat[stat.rfind(')').unwrap() + 1..].split_whitespace().nth(2).unwrap().parse().unwrap();
    let members = group_members(pgid);
    // The build's group: the top make, the sub-make, the sleep; not the test's.
    assert!(members.len() >= 3 && !members.contains(&std::process::id()), "{members:?}");
    run.kill().unwrap();
    run.wait().unwrap();
    common::wait_until("the build's make, sub-make or sleep outlived dentrylab", limit, || {
        group_members(pgid).is_empty()
    });
    common::wait_until("the partial build outlived dentrylab", limit, || {
        std::fs::read_dir(f.path("state/vm/kernels")).map(|d| d.count()).unwrap_or(0) == 0
    });
    f.assert_nothing_built();
}
