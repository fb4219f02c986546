//! One syntax for every `FERRY_*` setting, parsed by pure functions.
//!
//! Every crate that has settings (the engine's, shm's, ofi's, verbs') reads
//! each of its variables in exactly one place, through a [`Source`] (the
//! process environment in production, a table in tests), and parses the
//! value with the functions here, so that `64k` means the same thing to
//! every variable:
//!
//! - **sizes**: a count of bytes, with an optional binary suffix:
//!   `65536`, `64k`, `64K`, `64KiB`, `64kb`, `1m`, `1MiB`, `1g`;
//! - **numbers**: a plain decimal count (slots, buffers, ports, ...);
//! - **flags**: `1`/`0`, `true`/`false`, `yes`/`no`, `on`/`off`, any case;
//! - **text**: the value with surrounding blanks trimmed.
//!
//! A variable set to the empty string (or to blanks) is the same as a
//! variable that is unset: `FERRY_EAGER_LIMIT= cmd` runs `cmd` with the
//! default, as shells users write expect.
//!
//! ```
//! use ferry_core::settings::{self, Source};
//! let table = [("FERRY_EAGER_LIMIT", "16KiB"), ("FERRY_SHM_CMA", "")];
//! let src = |var: &str| table.iter().find(|(k, _)| *k == var).map(|(_, v)| v.to_string());
//! assert_eq!(settings::size(&src, "FERRY_EAGER_LIMIT").unwrap(), Some(16384));
//! assert_eq!(settings::flag(&src, "FERRY_SHM_CMA").unwrap(), None);
//! ```

use std::fmt;
use std::str::FromStr;

/// Where settings come from: the process environment for a real job, a
/// fixed table for a test. `None` means unset.
pub trait Source {
    /// The raw value of `var`, if it is set.
    fn get(&self, var: &str) -> Option<String>;
}

impl<F: Fn(&str) -> Option<String>> Source for F {
    fn get(&self, var: &str) -> Option<String> {
        self(var)
    }
}

/// A setting whose value does not parse or is out of range: which variable,
/// what it held, and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingError {
    /// The variable, e.g. `FERRY_EAGER_LIMIT`.
    pub var: &'static str,
    /// Its value, as given.
    pub value: String,
    /// What a valid value looks like.
    pub expected: String,
}

impl fmt::Display for SettingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}={:?}: expected {}",
            self.var, self.value, self.expected
        )
    }
}

impl std::error::Error for SettingError {}

fn error(var: &'static str, value: &str, expected: impl Into<String>) -> SettingError {
    SettingError {
        var,
        value: value.to_owned(),
        expected: expected.into(),
    }
}

/// The trimmed value of `var`, `None` if it is unset or blank.
pub fn text(src: &impl Source, var: &'static str) -> Option<String> {
    src.get(var)
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// Parses a size: decimal digits and an optional suffix `k`/`m`/`g`, with
/// or without `b`/`ib` (`64k`, `64KiB`, `64kb` are all 65536).
///
/// # Errors
/// A [`SettingError`] for anything else, or a size that overflows `usize`.
pub fn parse_size(var: &'static str, value: &str) -> Result<usize, SettingError> {
    const EXPECTED: &str = "a size such as 65536, 64k or 1MiB";
    let v = value.trim().to_ascii_lowercase();
    let digits_end = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (digits, suffix) = v.split_at(digits_end);
    let n: usize = digits.parse().map_err(|_| error(var, value, EXPECTED))?;
    let shift = match suffix.trim() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => return Err(error(var, value, EXPECTED)),
    };
    n.checked_mul(1usize << shift)
        .ok_or_else(|| error(var, value, EXPECTED))
}

/// Parses a flag: `1`/`true`/`yes`/`on` or `0`/`false`/`no`/`off`.
///
/// # Errors
/// A [`SettingError`] for anything else.
pub fn parse_flag(var: &'static str, value: &str) -> Result<bool, SettingError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(error(var, value, "0 or 1 (or true/false, yes/no, on/off)")),
    }
}

/// Parses a decimal number in `min..=max`.
///
/// # Errors
/// A [`SettingError`] if it is not a number or out of range.
pub fn parse_number<T>(var: &'static str, value: &str, min: T, max: T) -> Result<T, SettingError>
where
    T: FromStr + PartialOrd + fmt::Display + Copy,
{
    let expected = || format!("a number from {min} to {max}");
    match value.trim().parse::<T>() {
        Ok(n) if n >= min && n <= max => Ok(n),
        _ => Err(error(var, value, expected())),
    }
}

/// Reads `var` as a size (see [`parse_size`]); `None` if unset or blank.
///
/// # Errors
/// A [`SettingError`] if the value does not parse.
pub fn size(src: &impl Source, var: &'static str) -> Result<Option<usize>, SettingError> {
    text(src, var).map(|v| parse_size(var, &v)).transpose()
}

/// Reads `var` as a size in `min..=max` bytes; `None` if unset or blank.
///
/// # Errors
/// A [`SettingError`] if the value does not parse or is out of range.
pub fn size_in(
    src: &impl Source,
    var: &'static str,
    min: usize,
    max: usize,
) -> Result<Option<usize>, SettingError> {
    match size(src, var)? {
        Some(n) if !(min..=max).contains(&n) => Err(error(
            var,
            &text(src, var).unwrap_or_default(),
            format!("a size from {min} to {max} bytes"),
        )),
        n => Ok(n),
    }
}

/// Reads `var` as a flag (see [`parse_flag`]); `None` if unset or blank.
///
/// # Errors
/// A [`SettingError`] if the value does not parse.
pub fn flag(src: &impl Source, var: &'static str) -> Result<Option<bool>, SettingError> {
    text(src, var).map(|v| parse_flag(var, &v)).transpose()
}

/// Reads `var` as a number in `min..=max`; `None` if unset or blank.
///
/// # Errors
/// A [`SettingError`] if the value does not parse or is out of range.
pub fn number<T>(
    src: &impl Source,
    var: &'static str,
    min: T,
    max: T,
) -> Result<Option<T>, SettingError>
where
    T: FromStr + PartialOrd + fmt::Display + Copy,
{
    text(src, var)
        .map(|v| parse_number(var, &v, min, max))
        .transpose()
}

/// Reads `var` as one of `choices` (case-insensitive), returning the
/// matching value; `None` if unset or blank.
///
/// # Errors
/// A [`SettingError`] naming the choices if the value is none of them.
pub fn choice<T: Copy>(
    src: &impl Source,
    var: &'static str,
    choices: &[(&str, T)],
) -> Result<Option<T>, SettingError> {
    let Some(v) = text(src, var) else {
        return Ok(None);
    };
    let lower = v.to_ascii_lowercase();
    choices
        .iter()
        .find(|(name, _)| *name == lower)
        .map(|&(_, value)| Some(value))
        .ok_or_else(|| {
            let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
            error(var, &v, format!("one of {}", names.join(", ")))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(pairs: &'static [(&'static str, &'static str)]) -> impl Source {
        move |var: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == var)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn sizes_share_one_syntax() {
        for (text, want) in [
            ("65536", 65536),
            ("64k", 65536),
            ("64K", 65536),
            ("64KiB", 65536),
            ("64kb", 65536),
            (" 64 k ", 65536),
            ("1m", 1 << 20),
            ("1MiB", 1 << 20),
            ("2g", 2 << 30),
            ("0", 0),
        ] {
            assert_eq!(parse_size("X", text), Ok(want), "{text:?}");
        }
        for bad in [
            "-1",
            "12q",
            "k",
            "1.5k",
            "99999999999999999999g",
            "64 KiB x",
        ] {
            let e = parse_size("X", bad).unwrap_err();
            assert_eq!(e.var, "X");
            assert_eq!(e.value, bad);
        }
    }

    #[test]
    fn flags_numbers_and_choices() {
        for t in ["1", "true", "YES", "On"] {
            assert_eq!(parse_flag("X", t), Ok(true));
        }
        for f in ["0", "false", "no", "OFF"] {
            assert_eq!(parse_flag("X", f), Ok(false));
        }
        assert!(parse_flag("X", "2").is_err());
        assert_eq!(parse_number("X", "7", 1u8, 7), Ok(7));
        let e = parse_number("X", "8", 1u8, 7).unwrap_err();
        assert_eq!(e.expected, "a number from 1 to 7");
        assert!(parse_number("X", "64k", 0usize, usize::MAX).is_err());
    }

    #[test]
    fn empty_means_unset_for_every_kind() {
        let src = table(&[("A", ""), ("B", "   "), ("S", "8k"), ("C", "Spin")]);
        assert_eq!(size(&src, "A"), Ok(None));
        assert_eq!(flag(&src, "B"), Ok(None));
        assert_eq!(number(&src, "A", 0u32, 9), Ok(None));
        assert_eq!(text(&src, "B"), None);
        assert_eq!(size(&src, "MISSING"), Ok(None));
        assert_eq!(size(&src, "S"), Ok(Some(8192)));
        assert_eq!(
            choice(&src, "C", &[("spin", 1), ("passive", 2)]),
            Ok(Some(1))
        );
        let e = choice(&src, "S", &[("spin", 1), ("passive", 2)]).unwrap_err();
        assert_eq!(e.to_string(), "S=\"8k\": expected one of spin, passive");
        assert!(size_in(&src, "S", 0, 4096).is_err());
        assert_eq!(size_in(&src, "S", 0, 8192), Ok(Some(8192)));
    }
}
