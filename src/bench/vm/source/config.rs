//! The guest kernel's configuration: fragments (`CONFIG_X=VALUE` and
//! `# CONFIG_X is not set` lines) merged onto `make defconfig`'s `.config`,
//! and the check that `make olddefconfig` kept every line as asked. Pure
//! functions of text.

/// One configuration line: `CONFIG_X=VALUE`, or `# CONFIG_X is not set`
/// (`value` none; `CONFIG_X=n` reads the same).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Setting {
    pub name: String,
    pub value: Option<String>,
}

impl Setting {
    /// As a `.config` writes it.
    pub(crate) fn line(&self) -> String {
        match &self.value {
            Some(v) => format!("{}={v}", self.name),
            None => format!("# {} is not set", self.name),
        }
    }
}

/// The fragments' settings, a later line for the same option replacing
/// an earlier one; comments and blank lines are skipped. The error names
/// the line.
pub(crate) fn parse_fragment(text: &str) -> Result<Vec<Setting>, String> {
    let mut out: Vec<Setting> = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let l = l.trim();
        let s = if let Some(name) = not_set(l) {
            Setting { name: name.to_string(), value: None }
        } else if l.is_empty() || l.starts_with('#') {
            continue;
        } else if let Some((name, value)) = l.split_once('=') {
            Setting { name: name.to_string(), value: (value != "n").then(|| value.to_string()) }
        } else {
            return Err(format!("line {}: `{l}` is neither CONFIG_X=VALUE nor `# CONFIG_X is not set`", i + 1));
        };
        if !s.name.starts_with("CONFIG_") || !s.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("line {}: `{}` is not a CONFIG_ option", i + 1, s.name));
        }
        out.retain(|o| o.name != s.name);
        out.push(s);
    }
    Ok(out)
}

/// `later`'s settings over `base`'s: a later line for the same option
/// replaces the earlier one.
pub(crate) fn overlay(base: &mut Vec<Setting>, later: Vec<Setting>) {
    for s in later {
        base.retain(|o| o.name != s.name);
        base.push(s);
    }
}

fn not_set(l: &str) -> Option<&str> {
    l.strip_prefix("# ").and_then(|r| r.strip_suffix(" is not set"))
}

/// The option a `.config` line sets, if any.
fn option_of(l: &str) -> Option<&str> {
    let l = l.trim();
    not_set(l).or_else(|| if l.starts_with('#') { None } else { l.split_once('=').map(|(n, _)| n) })
}

/// `config` without the lines of the options `settings` name, and the
/// settings appended.
pub(crate) fn merge(config: &str, settings: &[Setting]) -> String {
    let mut out: Vec<String> = config
        .lines()
        .filter(|l| option_of(l).is_none_or(|n| !settings.iter().any(|s| s.name == n)))
        .map(str::to_string)
        .collect();
    out.extend(settings.iter().map(Setting::line));
    out.join("\n") + "\n"
}

/// The settings `config` does not hold as asked (an unset option may be
/// absent: Kconfig leaves out options whose menu is hidden).
pub(crate) fn dropped<'a>(config: &str, settings: &'a [Setting]) -> Vec<&'a Setting> {
    settings
        .iter()
        .filter(|s| {
            let set = config.lines().find_map(|l| l.trim().strip_prefix(s.name.as_str())?.strip_prefix('='));
            match &s.value {
                Some(v) => set != Some(v.as_str()),
                None => set.is_some(),
            }
        })
        .collect()
}

/// Why an option may have been dropped, when the tree's Kconfig depends
/// on something outside it.
pub(crate) fn hint(name: &str) -> &'static str {
    match name {
        "CONFIG_DEBUG_INFO_BTF" => "it needs pahole 1.16 or later on the PATH (Debian: dwarves)",
        _ => "its dependencies are not met in this tree (look it up in `make menuconfig` with /)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(name: &str, value: Option<&str>) -> Setting {
        Setting { name: name.into(), value: value.map(str::to_string) }
    }

    #[test]
    fn fragments_parse_later_lines_win_and_bad_lines_are_named() {
        let text = "# a comment\n\nCONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=\"x y\"\nCONFIG_A=n\n";
        assert_eq!(
            parse_fragment(text).unwrap(),
            [s("CONFIG_B", None), s("CONFIG_C", Some("\"x y\"")), s("CONFIG_A", None)]
        );
        assert!(parse_fragment("CONFIG_A=y\nOOPS\n").unwrap_err().contains("line 2"));
        assert!(parse_fragment("FOO=y\n").unwrap_err().contains("`FOO`"));
    }

    #[test]
    fn merge_replaces_each_option_once_and_dropped_sees_what_olddefconfig_undid() {
        let base = "CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=m\n# Comment\n";
        let want = [s("CONFIG_A", None), s("CONFIG_B", Some("y")), s("CONFIG_D", Some("y"))];
        let merged = merge(base, &want);
        assert_eq!(merged, "CONFIG_C=m\n# Comment\n# CONFIG_A is not set\nCONFIG_B=y\nCONFIG_D=y\n");
        assert!(dropped(&merged, &want).is_empty());
        // olddefconfig dropped D (unmet dependency) and turned A back on.
        let after = "CONFIG_A=y\nCONFIG_B=y\nCONFIG_C=m\nCONFIG_DX=y\n";
        let lost: Vec<&str> = dropped(after, &want).iter().map(|s| s.name.as_str()).collect();
        assert_eq!(lost, ["CONFIG_A", "CONFIG_D"]);
    }

    #[test]
    fn the_projects_fragment_parses() {
        let settings = parse_fragment(super::super::GUEST_CONFIG).unwrap();
        for must in ["CONFIG_PROC_KCORE", "CONFIG_KALLSYMS_ALL", "CONFIG_DEBUG_INFO_BTF", "CONFIG_SOFTLOCKUP_DETECTOR"]
        {
            assert!(settings.iter().any(|x| x.name == must && x.value.as_deref() == Some("y")), "{must}");
        }
        for fs in
            ["CONFIG_64BIT", "CONFIG_SMP", "CONFIG_TMPFS", "CONFIG_EXT4_FS", "CONFIG_OVERLAY_FS", "CONFIG_VIRTIO_PCI"]
        {
            assert!(settings.iter().any(|x| x.name == fs), "{fs}");
        }
    }
}
