//! `MPI_Info`: an ordered list of (key, value) strings.

use crate::abi::class::*;
use crate::abi::{MPI_MAX_INFO_KEY, MPI_MAX_INFO_VAL};
use crate::error::{Fail, Res};
use crate::handle::{Kind, Table};

/// Info objects: outside the runtime, because the standard lets programs
/// use them before `MPI_Init` (and `MPI_Abi_get_info` makes one).
pub static INFOS: std::sync::Mutex<Table<Info>> = std::sync::Mutex::new(Table::new(Kind::Info));

/// An info object. Keys keep the order they were first set in, which is
/// the order `MPI_Info_get_nthkey` reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Info {
    entries: Vec<(String, String)>,
}

/// Checks a key: 1 to `MPI_MAX_INFO_KEY - 1` bytes.
///
/// # Errors
/// `MPI_ERR_INFO_KEY`.
pub fn check_key(key: &str) -> Res {
    if key.is_empty() || key.len() >= MPI_MAX_INFO_KEY {
        return Err(Fail::msg(
            MPI_ERR_INFO_KEY,
            format!(
                "info key of {} bytes (1 to {} allowed)",
                key.len(),
                MPI_MAX_INFO_KEY - 1
            ),
        ));
    }
    Ok(())
}

impl Info {
    /// `MPI_Info_set`: sets or replaces.
    ///
    /// # Errors
    /// `MPI_ERR_INFO_KEY`, `MPI_ERR_INFO_VALUE` for strings too long.
    pub fn set(&mut self, key: &str, value: &str) -> Res {
        check_key(key)?;
        if value.is_empty() || value.len() >= MPI_MAX_INFO_VAL {
            return Err(Fail::msg(
                MPI_ERR_INFO_VALUE,
                format!(
                    "info value of {} bytes (1 to {} allowed)",
                    value.len(),
                    MPI_MAX_INFO_VAL - 1
                ),
            ));
        }
        match self.entries.iter_mut().find(|(k, _)| k == key) {
            Some(e) => e.1 = value.to_owned(),
            None => self.entries.push((key.to_owned(), value.to_owned())),
        }
        Ok(())
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// `MPI_Info_delete`.
    ///
    /// # Errors
    /// `MPI_ERR_INFO_NOKEY` if `key` is not set.
    pub fn delete(&mut self, key: &str) -> Res {
        check_key(key)?;
        let before = self.entries.len();
        self.entries.retain(|(k, _)| k != key);
        if self.entries.len() == before {
            return Err(Fail::msg(
                MPI_ERR_INFO_NOKEY,
                format!("info key {key:?} is not set"),
            ));
        }
        Ok(())
    }

    /// Number of keys.
    pub fn nkeys(&self) -> usize {
        self.entries.len()
    }

    /// The `n`th key.
    ///
    /// # Errors
    /// `MPI_ERR_ARG` for `n` out of range.
    pub fn nthkey(&self, n: i32) -> Res<&str> {
        usize::try_from(n)
            .ok()
            .and_then(|i| self.entries.get(i))
            .map(|(k, _)| k.as_str())
            .ok_or_else(|| {
                Fail::msg(
                    MPI_ERR_ARG,
                    format!("info key index {n} out of range 0..{}", self.entries.len()),
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_get_replace_delete_in_order() {
        let mut i = Info::default();
        i.set("b", "1").unwrap();
        i.set("a", "2").unwrap();
        i.set("b", "3").unwrap();
        assert_eq!(i.nkeys(), 2);
        assert_eq!(i.nthkey(0).unwrap(), "b");
        assert_eq!(i.nthkey(1).unwrap(), "a");
        assert_eq!(i.get("b"), Some("3"));
        assert_eq!(i.nthkey(2).unwrap_err().class, MPI_ERR_ARG);
        i.delete("b").unwrap();
        assert_eq!(i.delete("b").unwrap_err().class, MPI_ERR_INFO_NOKEY);
        assert_eq!(i.get("b"), None);
    }

    #[test]
    fn limits() {
        let mut i = Info::default();
        assert_eq!(i.set("", "x").unwrap_err().class, MPI_ERR_INFO_KEY);
        let long = "k".repeat(MPI_MAX_INFO_KEY);
        assert_eq!(i.set(&long, "x").unwrap_err().class, MPI_ERR_INFO_KEY);
        let longv = "v".repeat(MPI_MAX_INFO_VAL);
        assert_eq!(i.set("k", &longv).unwrap_err().class, MPI_ERR_INFO_VALUE);
    }
}

/// The exported functions' bodies.
pub(crate) mod calls;
