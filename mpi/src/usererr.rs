//! The program's own error classes and codes (`MPI_Add_error_class`,
//! `MPI_Add_error_code`, `MPI_Add_error_string` and MPI 4.1's removals).
//!
//! Classes and codes share one number space above `MPI_ERR_LASTCODE`, as
//! in MPICH: a class is also a code (of itself), so `MPI_Error_class` and
//! `MPI_Error_string` take either. Numbers are never given out twice, even
//! after a removal, so a stale number stays invalid. `MPI_LASTUSEDCODE`
//! reports the highest number in use: [`LAST_USED`], read through the
//! pointer `MPI_Comm_get_attr` hands out, so it lives in a static.

use std::collections::BTreeMap;
use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;

use crate::abi::class::{MPI_ERR_ARG, MPI_ERR_LASTCODE};
use crate::abi::MPI_MAX_ERROR_STRING;
use crate::error::{Fail, Res};

/// The value of `MPI_LASTUSEDCODE`.
pub static LAST_USED: AtomicI32 = AtomicI32::new(MPI_ERR_LASTCODE);

#[derive(Debug, Default)]
struct Registry {
    /// Every user code (classes included), with its class.
    class_of: BTreeMap<c_int, c_int>,
    strings: BTreeMap<c_int, String>,
    /// The last number given out.
    last: Option<c_int>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    class_of: BTreeMap::new(),
    strings: BTreeMap::new(),
    last: None,
});

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

impl Registry {
    fn next(&mut self) -> Res<c_int> {
        let n = self
            .last
            .unwrap_or(MPI_ERR_LASTCODE)
            .checked_add(1)
            .ok_or_else(|| Fail::new(MPI_ERR_ARG, "no error code is left to add"))?;
        self.last = Some(n);
        LAST_USED.fetch_max(n, Ordering::Relaxed);
        Ok(n)
    }

    /// MPI 4.1: a code or class is removed only once its string is.
    fn no_string(&self, code: c_int) -> Res {
        if self.strings.contains_key(&code) {
            return Err(Fail::msg(
                MPI_ERR_ARG,
                format!("error code {code} still has a string (remove it first)"),
            ));
        }
        Ok(())
    }

    fn user(&self, code: c_int, what: &str) -> Res<c_int> {
        self.class_of.get(&code).copied().ok_or_else(|| {
            Fail::msg(
                MPI_ERR_ARG,
                format!("{code} is not an error {what} the program added"),
            )
        })
    }
}

/// `MPI_Add_error_class`: a new class.
pub fn add_class() -> Res<c_int> {
    let mut r = registry();
    let class = r.next()?;
    r.class_of.insert(class, class);
    Ok(class)
}

/// `MPI_Add_error_code`: a new code of `class` (a standard class or one
/// the program added).
pub fn add_code(class: c_int) -> Res<c_int> {
    let mut r = registry();
    let standard = crate::error::is_valid_code(class);
    let added = r.class_of.get(&class) == Some(&class);
    if !standard && !added {
        return Err(Fail::msg(
            MPI_ERR_ARG,
            format!("{class} is not an error class"),
        ));
    }
    let code = r.next()?;
    r.class_of.insert(code, class);
    Ok(code)
}

/// `MPI_Add_error_string`: the string of a code or class the program
/// added (a standard one's cannot change).
pub fn set_string(code: c_int, s: &str) -> Res {
    if s.len() >= MPI_MAX_ERROR_STRING {
        return Err(Fail::msg(
            MPI_ERR_ARG,
            format!(
                "an error string of {} bytes (at most MPI_MAX_ERROR_STRING - 1 = {})",
                s.len(),
                MPI_MAX_ERROR_STRING - 1
            ),
        ));
    }
    let mut r = registry();
    r.user(code, "code or class")?;
    r.strings.insert(code, s.to_owned());
    Ok(())
}

/// `MPI_Remove_error_class`: only once no code of it is left.
pub fn remove_class(class: c_int) -> Res {
    let mut r = registry();
    if r.user(class, "class")? != class {
        return Err(Fail::msg(
            MPI_ERR_ARG,
            format!("{class} is an error code, not a class"),
        ));
    }
    if r.class_of.iter().any(|(&c, &k)| k == class && c != class) {
        return Err(Fail::msg(
            MPI_ERR_ARG,
            format!("error class {class} still has codes (remove them first)"),
        ));
    }
    r.no_string(class)?;
    r.class_of.remove(&class);
    Ok(())
}

/// `MPI_Remove_error_code`.
pub fn remove_code(code: c_int) -> Res {
    let mut r = registry();
    if r.user(code, "code")? == code {
        return Err(Fail::msg(
            MPI_ERR_ARG,
            format!("{code} is an error class, not a code"),
        ));
    }
    r.no_string(code)?;
    r.class_of.remove(&code);
    Ok(())
}

/// `MPI_Remove_error_string`.
pub fn remove_string(code: c_int) -> Res {
    let mut r = registry();
    r.user(code, "code or class")?;
    r.strings.remove(&code);
    Ok(())
}

/// The class of a code the program added (`None`: not one).
pub fn class_of(code: c_int) -> Option<c_int> {
    if code <= MPI_ERR_LASTCODE {
        return None;
    }
    registry().class_of.get(&code).copied()
}

/// The string of a code the program added (empty until it sets one, as
/// the standard says); `None` if it is not one.
pub fn string_of(code: c_int) -> Option<String> {
    if code <= MPI_ERR_LASTCODE {
        return None;
    }
    let r = registry();
    r.class_of.get(&code)?;
    Some(r.strings.get(&code).cloned().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::class::{MPI_ERR_OTHER, MPI_ERR_TRUNCATE};

    // One test: the registry is process-wide.
    #[test]
    fn classes_codes_strings_and_removal() {
        let class = add_class().unwrap();
        assert!(class > MPI_ERR_LASTCODE);
        assert_eq!(class_of(class), Some(class));
        assert_eq!(string_of(class).as_deref(), Some(""));
        let code = add_code(class).unwrap();
        assert!(code > class);
        assert_eq!(class_of(code), Some(class));
        let std_code = add_code(MPI_ERR_TRUNCATE).unwrap();
        assert_eq!(class_of(std_code), Some(MPI_ERR_TRUNCATE));
        assert!(add_code(code).is_err(), "a code is not a class");
        assert!(add_code(-5).is_err());
        assert!(LAST_USED.load(Ordering::Relaxed) >= std_code);
        set_string(code, "mine").unwrap();
        assert_eq!(string_of(code).as_deref(), Some("mine"));
        assert!(
            set_string(MPI_ERR_OTHER, "no").is_err(),
            "standard strings are fixed"
        );
        assert!(set_string(code, &"x".repeat(MPI_MAX_ERROR_STRING)).is_err());
        assert!(remove_class(class).is_err(), "it still has a code");
        assert!(remove_code(class).is_err(), "a class is not a code");
        assert!(remove_code(code).is_err(), "it still has a string");
        remove_string(code).unwrap();
        assert_eq!(string_of(code).as_deref(), Some(""));
        remove_code(code).unwrap();
        assert_eq!(class_of(code), None);
        remove_class(class).unwrap();
        assert_eq!(class_of(class), None);
        assert!(remove_class(class).is_err());
        let again = add_class().unwrap();
        assert!(again > std_code, "numbers are never given out twice");
    }
}
