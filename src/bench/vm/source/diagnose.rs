//! One line from a failed tool's output: the first hunk `patch` could
//! not apply, the first error of a kernel build. Pure functions of text.

/// The first failing hunk in `patch`'s output (its file, the hunk's
/// number and line), in one line.
pub(crate) fn patch_failure(out: &str) -> String {
    let mut file = None;
    for l in out.lines().map(str::trim) {
        if let Some(f) = l.strip_prefix("checking file ").or_else(|| l.strip_prefix("patching file ")) {
            file = Some(f.to_string());
        }
        if l.contains("FAILED") || l.contains("Reversed (or previously applied)") || l.contains("malformed") {
            let at = file.as_deref().map(|f| format!("{f}: ")).unwrap_or_default();
            return format!("{at}{l}");
        }
        if l.starts_with("can't find file to patch") || l.starts_with("No file to patch") {
            return format!("{l}: the patch names a file this tree lacks");
        }
    }
    out.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("patch failed with no output").trim().to_string()
}

/// The first error in a build's output: a compiler's or linker's
/// `error:` line (or an undefined reference), else the line before
/// make's first `***` line, else that line, else the last line.
pub(crate) fn first_error(log: &str) -> String {
    let lines: Vec<&str> = log.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let is_make =
        |l: &str| l.starts_with("make") && (l.contains("***") || l.contains(": Entering") || l.contains(": Leaving"));
    if let Some(l) = lines.iter().find(|l| l.contains("error:") || l.contains("undefined reference")) {
        return l.to_string();
    }
    if let Some(i) = lines.iter().position(|l| l.starts_with("make") && l.contains("***")) {
        return match i.checked_sub(1).map(|j| lines[j]) {
            Some(before) if !is_make(before) => before.to_string(),
            _ => lines[i].to_string(),
        };
    }
    lines.last().map_or_else(|| "no output".into(), |l| l.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_failing_hunk_is_named_with_its_file() {
        let dry = "checking file fs/dcache.c\nchecking file fs/namespace.c\nHunk #2 FAILED at 1734.\n\
                   1 out of 2 hunks FAILED\n";
        assert_eq!(patch_failure(dry), "fs/namespace.c: Hunk #2 FAILED at 1734.");
        let missing = "can't find file to patch at input line 3\nPerhaps you used the wrong -p or --strip option?\n";
        assert!(patch_failure(missing).starts_with("can't find file to patch at input line 3: "));
        let reversed =
            "checking file lib/maple_tree.c\nReversed (or previously applied) patch detected!  Skipping patch.\n";
        assert!(patch_failure(reversed).starts_with("lib/maple_tree.c: Reversed"));
    }

    #[test]
    fn a_build_failure_is_the_compilers_first_error() {
        let log = "  CC      fs/dcache.o\nfs/dcache.c: In function 'd_walk':\n\
                   fs/dcache.c:1401:9: error: 'x' undeclared (first use in this function)\n\
                   fs/dcache.c:1402:9: error: expected ';' before '}' token\n\
                   make[4]: *** [scripts/Makefile.build:229: fs/dcache.o] Error 1\nmake: *** [Makefile:224: __sub-make] Error 2\n";
        assert_eq!(first_error(log), "fs/dcache.c:1401:9: error: 'x' undeclared (first use in this function)");
        let tool = "  LEX     scripts/kconfig/lexer.lex.c\n/bin/sh: 1: flex: not found\n\
                    make[2]: *** [scripts/Makefile.host:9: scripts/kconfig/lexer.lex.c] Error 127\n";
        assert_eq!(first_error(tool), "/bin/sh: 1: flex: not found");
        assert_eq!(
            first_error("make: *** No rule to make target 'bzImage'.  Stop.\n"),
            "make: *** No rule to make target 'bzImage'.  Stop."
        );
    }
}
