//! `--help` and the documentation agree: every subcommand and every
//! `--option` that README.md and docs/guide/*.md name exists in
//! `dentrylab <command> --help`, and every public command is in the
//! README's command table.
//!
//! What counts as naming one:
//! - in code (an inline span, or a line of a fenced block, joined over a
//!   trailing `\`), `dentrylab CMD ...` or a span that starts with `CMD`:
//!   CMD must be a subcommand, and each `--option` after it, up to a shell
//!   separator (`|`, `&`, `;`, `#`, `>`), one of CMD's options;
//! - an inline span that starts with `--option`: an option of one of the
//!   commands the page is about (a guide page says which in its first line,
//!   `<!-- commands: reclaim create -->`; for the README, any command);
//! - a README table row that starts with a single-word span: a subcommand.
//!
//! Lines holding `_slot:` are placeholders the lead fills when branches are
//! merged, and are not checked.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::bin;
use regex::Regex;

/// The commands and their options, as `--help` prints them.
struct Cli {
    options: BTreeMap<String, BTreeSet<String>>,
}

impl Cli {
    fn from_help() -> Cli {
        let top = help(&[]);
        let mut options = BTreeMap::new();
        for cmd in commands_of(&top) {
            let text = help(&[&cmd]);
            options.insert(cmd, options_of(&text));
        }
        assert!(options.contains_key("reclaim"), "`dentrylab --help` lists no reclaim:\n{top}");
        Cli { options }
    }

    fn all_options(&self) -> BTreeSet<String> {
        self.options.values().flatten().cloned().collect()
    }
}

fn help(args: &[&str]) -> String {
    let out = bin().args(args).arg("--help").output().unwrap();
    assert!(out.status.success(), "dentrylab {args:?} --help failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The names in the "Commands:" block of the top-level help, `help` left out.
fn commands_of(top: &str) -> Vec<String> {
    top.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

/// Every `--long` flag on an option line of a command's help.
fn options_of(text: &str) -> BTreeSet<String> {
    let re = Regex::new(r"--[a-z][a-z0-9-]*").unwrap();
    text.lines()
        .filter(|l| l.trim_start().starts_with('-'))
        .filter_map(|l| re.find(l.trim_start().split("  ").next().unwrap_or("")))
        .map(|m| m.as_str().to_string())
        .collect()
}

/// One thing the documentation names that `--help` does not have.
#[derive(Debug, PartialEq)]
struct Miss {
    line: usize,
    what: String,
}

/// Checks one Markdown document. `scope`: the commands a bare `--option`
/// may belong to (None: any command). `table_commands`: table rows that
/// start with a single-word span name a subcommand.
fn check(doc: &str, cli: &Cli, scope: Option<&[String]>, table_commands: bool) -> Vec<Miss> {
    let mut misses = Vec::new();
    let invocation = Regex::new(r"(?:^|[^\w./-])dentrylab\s+([a-z][\w-]*)(.*)").unwrap();
    let option = Regex::new(r"(?:^|[\s\[(=,])(--[a-z][a-z0-9-]*)").unwrap();
    let span = Regex::new(r"`([^`]+)`").unwrap();
    let row = Regex::new(r"^\|\s*`([a-z][a-z-]*)`\s*\|").unwrap();
    let bare_scope: BTreeSet<String> = match scope {
        Some(cmds) => cmds.iter().filter_map(|c| cli.options.get(c)).flatten().cloned().collect(),
        None => cli.all_options(),
    };

    // Options after a command, up to a shell separator. After ` -- `, the
    // words are another dentrylab command (`vm -- reclaim --sizes …`): its
    // options are checked against that command.
    fn check_command(cli: &Cli, option: &Regex, line: usize, cmd: &str, rest: &str, misses: &mut Vec<Miss>) {
        let Some(known) = cli.options.get(cmd) else {
            misses.push(Miss { line, what: format!("subcommand `{cmd}`") });
            return;
        };
        let mut end = rest.find(['|', '&', ';', '#', '>']).unwrap_or(rest.len());
        if let Some(sep) = rest[..end].find(" -- ") {
            let inner = rest[sep + 4..end].trim_start();
            let word_end = inner.find(char::is_whitespace).unwrap_or(inner.len());
            check_command(cli, option, line, &inner[..word_end], &inner[word_end..], misses);
            end = sep;
        }
        for m in option.captures_iter(&rest[..end]) {
            let o = &m[1];
            if !known.contains(o) {
                misses.push(Miss { line, what: format!("`{cmd} {o}`") });
            }
        }
    }

    let lines: Vec<&str> = doc.lines().collect();
    let mut fenced = false;
    let mut i = 0;
    while i < lines.len() {
        let n = i + 1;
        let line = lines[i];
        i += 1;
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if line.contains("_slot:") {
            continue;
        }
        if fenced {
            // A command continued over `\` lines is one command.
            let mut joined = line.to_string();
            while joined.trim_end().ends_with('\\') && i < lines.len() {
                joined = format!("{} {}", joined.trim_end().trim_end_matches('\\'), lines[i]);
                i += 1;
            }
            for c in invocation.captures_iter(&joined) {
                check_command(cli, &option, n, &c[1], &c[2], &mut misses);
            }
            continue;
        }
        if table_commands
            && let Some(c) = row.captures(line)
            && !cli.options.contains_key(&c[1])
        {
            misses.push(Miss { line: n, what: format!("subcommand `{}` in a table", &c[1]) });
        }
        for s in span.captures_iter(line) {
            let code = s[1].trim();
            if let Some(c) = invocation.captures(code) {
                check_command(cli, &option, n, &c[1], &c[2], &mut misses);
            } else if let Some(first) = code.split_whitespace().next()
                && cli.options.contains_key(first)
                && code.contains("--")
            {
                let rest = &code[first.len()..];
                check_command(cli, &option, n, first, rest, &mut misses);
            } else if code.starts_with("--") {
                let o = option.captures(code).map(|m| m[1].to_string()).unwrap_or_default();
                if !bare_scope.contains(&o) {
                    misses.push(Miss { line: n, what: format!("option `{o}`") });
                }
            }
        }
    }
    misses
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn report(path: &Path, misses: &[Miss]) -> String {
    let mut s = String::new();
    for m in misses {
        s += &format!("{}:{}: {} is not in `dentrylab --help`\n", path.display(), m.line, m.what);
    }
    s
}

#[test]
fn readme_names_only_what_help_has() {
    let cli = Cli::from_help();
    let path = repo().join("README.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let misses = check(&doc, &cli, None, true);
    assert!(misses.is_empty(), "{}", report(&path, &misses));
}

#[test]
fn readme_lists_every_command() {
    let cli = Cli::from_help();
    let doc = std::fs::read_to_string(repo().join("README.md")).unwrap();
    for cmd in cli.options.keys() {
        let row = format!("| `{cmd}` |");
        assert!(doc.lines().any(|l| l.starts_with(&row)), "README.md's command table has no row for `{cmd}`");
    }
}

#[test]
fn guide_pages_name_only_what_help_has() {
    let cli = Cli::from_help();
    let dir = repo().join("docs/guide");
    let mut pages: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    pages.retain(|p| p.extension().is_some_and(|e| e == "md"));
    pages.sort();
    assert!(!pages.is_empty(), "no pages in {}", dir.display());
    let mut all = String::new();
    for page in &pages {
        let doc = std::fs::read_to_string(page).unwrap();
        let first = doc.lines().next().unwrap_or("");
        let scope: Vec<String> = first
            .strip_prefix("<!-- commands:")
            .and_then(|r| r.strip_suffix("-->"))
            .unwrap_or_else(|| panic!("{}: the first line must be `<!-- commands: CMD ... -->`", page.display()))
            .split_whitespace()
            .map(str::to_string)
            .collect();
        for c in &scope {
            assert!(cli.options.contains_key(c), "{}: `{c}` in its commands line is not a subcommand", page.display());
        }
        all += &report(page, &check(&doc, &cli, Some(&scope), false));
    }
    assert!(all.is_empty(), "{all}");
}

/// The checker catches what it is for: a removed option, a removed
/// command, an option of another command, in every place it looks.
#[test]
fn the_check_fails_on_what_help_lacks() {
    let cli = Cli::from_help();
    let doc = "\
# x
| `reclaim` | fine |
| `no-such-command` | gone |
Run `dentrylab reclaim --sizes quick --no-such-option`.
Or `status --fail-on warn --reps 3`.
A bare `--vanished FILE` in prose.
```
dentrylab reclaim --sizes 1M \\
    --gone-too
dentrylab status --json - | jq . --not-checked
```
<!-- | `also-gone` | _slot: filled at merge_ | -->
";
    let misses: Vec<String> =
        check(doc, &cli, None, true).into_iter().map(|m| format!("{}: {}", m.line, m.what)).collect();
    assert_eq!(
        misses,
        vec![
            "3: subcommand `no-such-command` in a table",
            "4: `reclaim --no-such-option`",
            "5: `status --reps`",
            "6: option `--vanished`",
            "8: `reclaim --gone-too`",
        ],
    );
    // A page about `status` may not name a reclaim-only option bare.
    let misses = check("Use `--watchdog-check`.\n", &cli, Some(&["status".to_string()]), false);
    assert_eq!(misses, vec![Miss { line: 1, what: "option `--watchdog-check`".into() }]);
    // After ` -- ` the words are a command of their own (`vm -- reclaim …`).
    let misses = check("`dentrylab vm --kernel host --sizes 1M -- reclaim --sizes 1M --kernel x`\n", &cli, None, true);
    let misses: Vec<String> = misses.into_iter().map(|m| m.what).collect();
    assert_eq!(misses, vec!["`reclaim --kernel`", "`vm --sizes`"]);
    // And what --help has passes.
    assert!(check("`dentrylab reclaim --sizes auto` and `--json FILE`\n", &cli, None, true).is_empty());
}
