//! # ferry-floors
//!
//! Checks that a crate's modules keep to their floors: a module may use
//! modules on its own floor or below it, never one above. A crate lists its
//! floors once, bottom first, in a `## Floors` section of its crate docs
//! (`src/lib.rs`):
//!
//! ```text
//! //! ## Floors
//! //! 1. `error`, `config`: the words every module speaks.
//! //! 2. `select::node`, `raw::cell`: the devices and the engine's cell.
//! //! 3. `world`: the top.
//! ```
//!
//! A numbered item starts a floor; its modules are the backticked paths
//! before the first colon outside backticks, and the rest is prose for
//! people. An entry may name a module nested in another (`select::node`):
//! a file, or an imported path, belongs to the longest entry its module
//! path starts with, so a module's children can sit on a lower floor than
//! the module itself.
//!
//! [`check_crate`] reads that list and every `.rs` file under `src/`
//! (`src/bin/` excepted: binaries are crates of their own), and reports
//! each `use crate::…` and `crate::` path (`$crate::` too) that points to a
//! module on a higher floor, naming the file, the line and the path. It
//! also reports a file whose module is on no floor, and a `crate::` path it
//! cannot place, so a new module has to be given a floor. A path through
//! the crate root's re-exports (`crate::Error`) counts as the module the
//! root takes it from (`pub use error::{Error, …}` in `lib.rs`), and a
//! `#[macro_export]` macro as the module that defines it.
//!
//! What it does not see: comments and doc comments (a doc link may point
//! anywhere), string and character literals, `self::` and `super::` paths
//! (they stay inside a module unless they climb to the root: write
//! `crate::` for those), and names brought in by a glob (`use crate::x::*`
//! counts as a use of `x`, whatever the glob brings). Test code counts like
//! any other: a unit test that needs a higher floor belongs in the crate's
//! `tests/`. It is a scanner, not a parser: good for `rustfmt`ed code.
//!
//! [`check`] takes the floor list as an argument instead, for a crate that
//! keeps it elsewhere.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// A crate's floors, bottom first; each holds module paths (`["coll"]`,
/// `["select", "node"]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Floors {
    floors: Vec<Vec<Vec<String>>>,
}

impl Floors {
    /// Floors from lists of module paths, bottom first: `&[&["error",
    /// "config"], &["select::node"], &["world"]]`.
    pub fn new(floors: &[&[&str]]) -> Floors {
        Floors {
            floors: floors
                .iter()
                .map(|f| f.iter().map(|m| split_path(m)).collect())
                .collect(),
        }
    }

    /// The floors listed in the `## Floors` section of a crate's docs
    /// (`lib_rs`: the text of its `src/lib.rs`); see the crate docs for the
    /// format.
    ///
    /// # Errors
    /// No such section, a floor without modules, or a name that is not a
    /// module path.
    pub fn from_crate_docs(lib_rs: &str) -> Result<Floors, String> {
        let mut lines = lib_rs
            .lines()
            .map(str::trim_start)
            .take_while(|l| l.starts_with("//!") || l.is_empty() || l.starts_with("#!"))
            .filter_map(|l| l.strip_prefix("//!"))
            .map(|l| l.strip_prefix(' ').unwrap_or(l));
        if !lines.any(|l| l.trim_end() == "## Floors") {
            return Err("no `## Floors` section in the crate docs".to_owned());
        }
        // Each numbered item with the lines that continue it.
        let mut items: Vec<String> = Vec::new();
        let mut open = false;
        for line in lines.take_while(|l| !l.starts_with('#')) {
            if let Some(item) = numbered_item(line) {
                items.push(item.to_owned());
                open = true;
            } else if line.trim().is_empty() {
                open = false;
            } else if open {
                if let Some(item) = items.last_mut() {
                    item.push(' ');
                    item.push_str(line.trim());
                }
            }
        }
        let mut floors = Vec::new();
        for line in &items {
            let names = names_before_colon(line);
            if names.is_empty() {
                return Err(format!(
                    "floor {} names no module: {line:?}",
                    floors.len() + 1
                ));
            }
            let mut floor = Vec::new();
            for name in names {
                if !is_module_path(&name) {
                    return Err(format!("`{name}` is not a module path: {line:?}"));
                }
                floor.push(split_path(&name));
            }
            floors.push(floor);
        }
        if floors.is_empty() {
            return Err("the `## Floors` section lists no floor".to_owned());
        }
        Ok(Floors { floors })
    }

    /// The floor (0 = bottom) and entry that `path` belongs to: the
    /// longest entry that `path` starts with.
    fn place(&self, path: &[String]) -> Option<(usize, &[String])> {
        let mut best: Option<(usize, &[String])> = None;
        for (floor, entries) in self.floors.iter().enumerate() {
            for entry in entries {
                if path.starts_with(entry) && best.is_none_or(|(_, b)| entry.len() > b.len()) {
                    best = Some((floor, entry));
                }
            }
        }
        best
    }

    /// The first segment of every entry: the crate's top-level modules
    /// that have a floor.
    fn tops(&self) -> BTreeSet<&str> {
        self.floors
            .iter()
            .flatten()
            .filter_map(|e| e.first().map(String::as_str))
            .collect()
    }
}

/// One thing wrong with a crate's floors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The file, relative to the crate's `src/`.
    pub file: PathBuf,
    /// The line (1-based; 0 for the file as a whole).
    pub line: usize,
    /// What is wrong.
    pub what: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file.display(), self.line, self.what)
    }
}

/// Checks the crate whose `src/` is `src` against the `## Floors` list in
/// its `lib.rs`.
///
/// # Errors
/// A report naming every violation (file, line and import), one a line;
/// or why the list or the sources could not be read.
pub fn check_crate(src: &Path) -> Result<(), String> {
    let lib = fs::read_to_string(src.join("lib.rs"))
        .map_err(|e| format!("{}: {e}", src.join("lib.rs").display()))?;
    let floors = Floors::from_crate_docs(&lib)
        .map_err(|e| format!("{}: {e}", src.join("lib.rs").display()))?;
    let violations = check(src, &floors).map_err(|e| format!("{}: {e}", src.display()))?;
    if violations.is_empty() {
        return Ok(());
    }
    let mut report = format!(
        "{} import(s) of {} run up a floor (or are on none; the floors are in lib.rs):\n",
        violations.len(),
        src.display()
    );
    for v in &violations {
        report.push_str(&format!("  {v}\n"));
    }
    Err(report)
}

/// Checks every module file under `src` (the crate's `src/`; `lib.rs`,
/// `main.rs` and `bin/` aside) against `floors`, and returns what is
/// wrong, in file order.
///
/// # Errors
/// If a directory or file cannot be read.
pub fn check(src: &Path, floors: &Floors) -> io::Result<Vec<Violation>> {
    let mut files = Vec::new();
    collect_files(src, src, &mut files)?;
    files.sort();
    let root = match fs::read_to_string(src.join("lib.rs")) {
        Ok(text) => Root::read(&strip(&text), &floors.tops()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Root::default(),
        Err(e) => return Err(e),
    };
    let mut texts = Vec::new();
    for rel in files {
        let text = strip(&fs::read_to_string(src.join(&rel))?);
        texts.push((rel, text));
    }
    let macros = macro_homes(&texts);
    let mut out = Vec::new();
    for (rel, text) in &texts {
        let module = module_path(rel);
        let Some((home, _)) = floors.place(&module) else {
            out.push(Violation {
                file: rel.clone(),
                line: 0,
                what: format!("module `{}` is on no floor", module.join("::")),
            });
            continue;
        };
        for (line, path) in crate_paths(text) {
            let target = resolve(&path, &root, &macros);
            let shown = format!("crate::{}", path.join("::"));
            match target.as_deref().and_then(|t| floors.place(t)) {
                Some((floor, entry)) if floor > home => out.push(Violation {
                    file: rel.clone(),
                    line,
                    what: format!(
                        "`{shown}` runs up: `{}` is on floor {}, this module on floor {}",
                        entry.join("::"),
                        floor + 1,
                        home + 1
                    ),
                }),
                Some(_) => {}
                None => out.push(Violation {
                    file: rel.clone(),
                    line,
                    what: format!("`{shown}`: cannot tell which floor this is on"),
                }),
            }
        }
    }
    Ok(out)
}

/// `a::b` → `["a", "b"]`.
fn split_path(path: &str) -> Vec<String> {
    path.split("::").map(str::to_owned).collect()
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_module_path(s: &str) -> bool {
    s.split("::").all(is_ident)
}

/// The text of a numbered list item (`1. text` → `text`), if `line` is one.
fn numbered_item(line: &str) -> Option<&str> {
    let digits = line.len() - line.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return None;
    }
    line[digits..].strip_prefix(". ")
}

/// The backticked names of `text` before its first colon outside
/// backticks.
fn names_before_colon(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut current: Option<String> = None;
    for c in text.chars() {
        match (&mut current, c) {
            (None, '`') => current = Some(String::new()),
            (None, ':') => break,
            (Some(name), '`') => {
                names.push(std::mem::take(name));
                current = None;
            }
            (Some(name), c) => name.push(c),
            (None, _) => {}
        }
    }
    names
}

/// Every `.rs` file under `dir`, relative to `src`, but the crate root's
/// own and its binaries'.
fn collect_files(src: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        let rel = path.strip_prefix(src).unwrap_or(&path).to_path_buf();
        if path.is_dir() {
            if rel != Path::new("bin") {
                collect_files(src, &path, out)?;
            }
        } else if path.extension().is_some_and(|e| e == "rs")
            && rel != Path::new("lib.rs")
            && rel != Path::new("main.rs")
        {
            out.push(rel);
        }
    }
    Ok(())
}

/// The module path of a file: `coll/algo/mod.rs` → `coll::algo`,
/// `device/node.rs` → `device::node`. A file included with `#[path]`
/// gets the path of where it lies.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.strip_suffix(".rs").unwrap_or(&last).to_owned();
        if stem != "mod" {
            parts.push(stem);
        }
    }
    parts
}

/// What the crate root makes visible: the names it re-exports, with the
/// paths they come from.
#[derive(Debug, Default)]
struct Root {
    reexports: BTreeMap<String, Vec<String>>,
}

impl Root {
    /// Reads the `pub use` items of the (stripped) root whose paths start
    /// with one of the crate's modules (`tops`), or with `crate::` or
    /// `self::`.
    fn read(root: &str, tops: &BTreeSet<&str>) -> Root {
        let mut reexports = BTreeMap::new();
        let mut rest = root;
        while let Some(at) = find_word(rest, "use") {
            let before = rest[..at].trim_end();
            let after = &rest[at + 3..];
            let end = after.find(';').unwrap_or(after.len());
            let public = before.ends_with("pub") || before.ends_with(')');
            if public {
                let mut paths = Vec::new();
                let mut p = Parser::new(&after[..end]);
                p.tree(&mut Vec::new(), &mut paths);
                for (path, name) in paths {
                    let path: Vec<String> = match path.first().map(String::as_str) {
                        Some("crate" | "self") => path[1..].to_vec(),
                        Some(first) if tops.contains(first) => path,
                        _ => continue,
                    };
                    if let Some(name) = name {
                        reexports.insert(name, path);
                    }
                }
            }
            rest = &after[end..];
        }
        Root { reexports }
    }
}

/// Where each `#[macro_export]` macro is defined: macro name → the
/// defining file's module path.
fn macro_homes(texts: &[(PathBuf, String)]) -> BTreeMap<String, Vec<String>> {
    let mut homes = BTreeMap::new();
    for (rel, text) in texts {
        let mut rest = text.as_str();
        while let Some(at) = rest.find("macro_rules!") {
            let after = rest[at + "macro_rules!".len()..].trim_start();
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                homes.insert(name, module_path(rel));
            }
            rest = &rest[at + 1..];
        }
    }
    homes
}

/// The module path a `crate::` path points into, if it can be told.
fn resolve(
    path: &[String],
    root: &Root,
    macros: &BTreeMap<String, Vec<String>>,
) -> Option<Vec<String>> {
    let first = path.first()?;
    if let Some(target) = root.reexports.get(first) {
        let mut full = target.clone();
        full.extend_from_slice(&path[1..]);
        return Some(full);
    }
    if let Some(home) = macros.get(first) {
        return Some(home.clone());
    }
    Some(path.to_vec())
}

/// Every path that follows a `crate::` in (stripped) `text`, with its line:
/// a use tree is expanded into its paths (`crate::{a::B, c}` gives `a::B`
/// and `c`), a glob ends its path at the module.
fn crate_paths(text: &str) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(found) = text[from..].find("crate::") {
        let at = from + found;
        from = at + "crate::".len();
        let boundary = at == 0 || {
            let b = bytes[at - 1];
            !(b.is_ascii_alphanumeric() || b == b'_')
        };
        if !boundary {
            continue;
        }
        let line = 1 + text[..at].matches('\n').count();
        let mut paths = Vec::new();
        let mut p = Parser::new(&text[from..]);
        p.tree(&mut Vec::new(), &mut paths);
        for (path, _) in paths {
            if !path.is_empty() {
                out.push((line, path));
            }
        }
    }
    out
}

/// A use-tree reader over stripped source.
struct Parser<'a> {
    rest: &'a str,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Parser<'a> {
        Parser { rest: text }
    }

    fn skip_space(&mut self) {
        self.rest = self.rest.trim_start();
    }

    fn eat(&mut self, token: &str) -> bool {
        self.skip_space();
        match self.rest.strip_prefix(token) {
            Some(rest) => {
                self.rest = rest;
                true
            }
            None => false,
        }
    }

    fn ident(&mut self) -> Option<String> {
        self.skip_space();
        let len = self
            .rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(self.rest.len());
        if len == 0 || self.rest.starts_with(|c: char| c.is_ascii_digit()) {
            return None;
        }
        let (ident, rest) = self.rest.split_at(len);
        self.rest = rest;
        Some(ident.to_owned())
    }

    /// Reads one use tree after `prefix`, pushing each full path with the
    /// name it is visible as (`None` for a glob or `self`-less group).
    fn tree(&mut self, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, Option<String>)>) {
        if self.eat("{") {
            loop {
                if self.eat("}") {
                    return;
                }
                let depth = prefix.len();
                self.tree(prefix, out);
                prefix.truncate(depth);
                if !self.eat(",") {
                    self.eat("}");
                    return;
                }
            }
        }
        if self.eat("*") {
            out.push((prefix.clone(), None));
            return;
        }
        let Some(ident) = self.ident() else {
            out.push((prefix.clone(), None));
            return;
        };
        if ident == "self" {
            let name = prefix.last().cloned();
            out.push((prefix.clone(), self.alias().or(name)));
            return;
        }
        prefix.push(ident);
        let before = self.rest;
        if self.eat("::") {
            self.skip_space();
            if self.rest.starts_with('<') {
                // `crate::Type::<T>`: the type's path ends here.
                self.rest = before;
                out.push((prefix.clone(), prefix.last().cloned()));
                return;
            }
            self.tree(prefix, out);
            return;
        }
        let name = self.alias().or_else(|| prefix.last().cloned());
        out.push((prefix.clone(), name));
    }

    /// `as name`, if next.
    fn alias(&mut self) -> Option<String> {
        let before = self.rest;
        if self.ident().as_deref() == Some("as") {
            return self.ident();
        }
        self.rest = before;
        None
    }
}

/// The position of `word` in `text` as a whole word.
fn find_word(text: &str, word: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(found) = text[from..].find(word) {
        let at = from + found;
        let end = at + word.len();
        let before = at == 0 || !is_word_byte(bytes[at - 1]);
        let after = end == bytes.len() || !is_word_byte(bytes[end]);
        if before && after {
            return Some(at);
        }
        from = end;
    }
    None
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// `text` with comments, string literals and character literals blanked
/// out (newlines kept, so line numbers hold).
fn strip(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && (i == 0 || !is_word_char(chars[i - 1]))
        {
            // A raw string: r"…", r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                match chars.get(j) {
                    None => break,
                    Some('"') if (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) => {
                        j += 1 + hashes;
                        break;
                    }
                    Some(&ch) => {
                        out.push(blank(ch));
                        j += 1;
                    }
                }
            }
            i = j;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if let Some(&ch) = chars.get(i) {
                    out.push(blank(ch));
                }
                i += 1;
            }
            i += 1;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{..}'), or a lifetime.
            if next == Some('\\') {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

#[cfg(test)]
mod tests;
