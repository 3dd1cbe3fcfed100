//! Run-time loading of vendor libraries into function-pointer tables, as
//! FFmpeg's `dynlink_loader.h` and cudarc's `sys` modules do, but every
//! missing library or symbol is a [`crate::Error::Device`] naming what was
//! tried, never a panic.

use crate::{Error, Result};
use libloading::Library;

/// Opens the first library that loads: the path in `env_override` when that
/// variable is set (and only it), else each of `candidates` in order.
pub(crate) fn open_first(
    what: &str,
    env_override: &str,
    candidates: &[&str],
) -> Result<(Library, String)> {
    let names: Vec<String> = match std::env::var(env_override) {
        Ok(path) if !path.is_empty() => vec![path],
        _ => candidates.iter().map(|s| s.to_string()).collect(),
    };
    let mut reasons = Vec::new();
    for name in &names {
        // SAFETY: loading a vendor runtime runs its initialisers; these are
        // the libraries' documented entry points and need no arguments.
        match unsafe { Library::new(name) } {
            Ok(lib) => return Ok((lib, name.clone())),
            Err(e) => reasons.push(format!("{name}: {e}")),
        }
    }
    Err(Error::Device(format!(
        "{what} not found (tried {}; set {env_override} to a path to override): {}",
        names.join(", "),
        reasons
            .last()
            .map(String::as_str)
            .unwrap_or("no candidates")
    )))
}

pub(crate) fn missing_symbol(library: &str, symbol: &str, e: libloading::Error) -> Error {
    Error::Device(format!(
        "{library}: required symbol {symbol} not found: {e}"
    ))
}

/// Declares a function table: required symbols are plain fields (loading
/// fails without them), optional ones are `Option`s (features such as
/// external memory that older drivers lack). Field names are the exported
/// symbol names, `_v2` suffixes included.
macro_rules! fn_table {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident;
        required { $( $rf:ident : fn($($rt:ty),* $(,)?) -> $rr:ty; )* }
        optional { $( $of:ident : fn($($ot:ty),* $(,)?) -> $or:ty; )* }
    ) => {
        $(#[$meta])*
        #[allow(non_snake_case)]
        $vis struct $name {
            /// The library name or path that was opened.
            pub library: String,
            // Keeps the code behind the pointers mapped; tables live in
            // statics, so it is never unloaded.
            _lib: libloading::Library,
            $( pub $rf: unsafe extern "C" fn($($rt),*) -> $rr, )*
            $( pub $of: Option<unsafe extern "C" fn($($ot),*) -> $or>, )*
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name)).field("library", &self.library).finish_non_exhaustive()
            }
        }

        impl $name {
            /// Resolves every symbol in `lib`.
            ///
            /// # Safety
            /// `lib` must export each symbol with the declared signature
            /// (the vendor's C headers are the source of these signatures).
            #[allow(non_snake_case)]
            pub(crate) unsafe fn resolve(lib: libloading::Library, library: String) -> $crate::Result<Self> {
                $(
                    // SAFETY: the symbol has the declared signature (this
                    // function's contract).
                    let $rf = *unsafe { lib.get::<unsafe extern "C" fn($($rt),*) -> $rr>(concat!(stringify!($rf), "\0").as_bytes())
                        .map_err(|e| $crate::device::gpu::loader::missing_symbol(&library, stringify!($rf), e))? };
                )*
                $(
                    // SAFETY: as above.
                    let $of = unsafe { lib.get::<unsafe extern "C" fn($($ot),*) -> $or>(concat!(stringify!($of), "\0").as_bytes()) }
                        .ok()
                        .map(|s| *s);
                )*
                Ok(Self { library, _lib: lib, $($rf,)* $($of,)* })
            }
        }
    };
}
pub(crate) use fn_table;

/// A table loaded once per process. The error is kept as text so every
/// caller gets an equal `Error::Device`.
pub(crate) type Cached<T> = std::sync::OnceLock<std::result::Result<T, String>>;

pub(crate) fn get_or_load<T>(
    cell: &'static Cached<T>,
    load: impl FnOnce() -> Result<T>,
) -> Result<&'static T> {
    cell.get_or_init(|| {
        load().map_err(|e| match e {
            Error::Device(s) => s,
            other => other.to_string(),
        })
    })
    .as_ref()
    .map_err(|s| Error::Device(s.clone()))
}

/// Reads a C string the runtime owns (error names, logs).
///
/// # Safety
/// `p` is NULL or a NUL-terminated string that outlives this call.
pub(crate) unsafe fn c_str(p: *const std::ffi::c_char) -> String {
    if p.is_null() {
        return String::from("(null)");
    }
    // SAFETY: non-NULL and NUL-terminated (the caller's promise).
    unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::c_char;

    fn_table! {
        #[allow(dead_code)]
        struct WantsTooMuch;
        required {
            strlen: fn(*const c_char) -> usize;
            vmafx_no_such_symbol: fn() -> i32;
        }
        optional {}
    }

    fn_table! {
        #[allow(dead_code)]
        struct LibcStrlen;
        required { strlen: fn(*const c_char) -> usize; }
        optional { vmafx_optional_absent: fn() -> i32; }
    }

    #[test]
    fn missing_library_names_every_candidate_and_the_override() {
        let e = open_first(
            "Thing",
            "VMAFX_TEST_UNSET_VAR",
            &["libvmafx_absent.so.1", "libvmafx_absent.so"],
        )
        .unwrap_err();
        let s = e.to_string();
        assert!(
            s.contains("tried libvmafx_absent.so.1, libvmafx_absent.so;"),
            "{s}"
        );
        assert!(s.contains("VMAFX_TEST_UNSET_VAR"), "{s}");
    }

    #[test]
    fn missing_required_symbol_is_an_error_naming_it() {
        let (lib, name) = open_first("libc", "VMAFX_TEST_UNSET_VAR", &["libc.so.6"]).unwrap();
        // SAFETY: the one symbol libc has is `strlen`, declared with its C
        // signature; the missing one is never called (resolve fails first).
        let e = unsafe { WantsTooMuch::resolve(lib, name) }
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("vmafx_no_such_symbol") && e.contains("libc.so.6"),
            "{e}"
        );
    }

    #[test]
    fn missing_optional_symbol_is_none() {
        let (lib, name) = open_first("libc", "VMAFX_TEST_UNSET_VAR", &["libc.so.6"]).unwrap();
        // SAFETY: libc's `strlen` has the declared signature; the optional
        // symbol is absent, so nothing else is bound.
        let t = unsafe { LibcStrlen::resolve(lib, name) }.unwrap();
        assert!(t.vmafx_optional_absent.is_none());
        // SAFETY: strlen of a NUL-terminated literal.
        assert_eq!(unsafe { (t.strlen)(c"abc".as_ptr()) }, 3);
    }
}
