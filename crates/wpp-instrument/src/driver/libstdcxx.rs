//! C++ in the modes that trace memory: libstdc++'s class templates (`std::string`, streams,
//! locales) are instantiated in the program instead of called in `libstdc++.so`, so their
//! loads and stores are the program's, traced like any other.
//!
//! libstdc++ declares its common instantiations `extern template`, which keeps their code in
//! the shared library, where wpp sees no store: the length a `std::string` grew to would read
//! as the program's store of its old length (a wrong dependence), and the characters it
//! appended as whatever last wrote those heap bytes. The declarations are guarded by
//! `_GLIBCXX_EXTERN_TEMPLATE`, which `<bits/c++config.h>` defines unconditionally, so a `-D`
//! cannot change it; a header included first (`-include`) includes that one and redefines the
//! macro to 0. The instantiations are the same source as the library's, so the program
//! behaves the same; they are `linkonce_odr`, so the linker keeps one. The header tests
//! `__has_include`, so it does nothing under libc++ or in C.
//!
//! The header lives at a fixed path (next to the runtime library when that directory is
//! writable, else in the temporary directory), because build systems record it among a
//! compilation's dependencies (`-MD`).

use super::runtime::{cache_dir, unique};
use super::DriverError;
use std::path::{Path, PathBuf};

/// The forced-include header.
const HEADER: &str = "\
/* Written by wpp cc: instantiate libstdc++'s templates in the program, so that the
 * trace-addr and ewpp modes trace their loads and stores (wpp_instrument::driver::libstdcxx). */
#if defined(__cplusplus) && defined(__has_include)
#if __has_include(<bits/c++config.h>)
#include <bits/c++config.h>
#undef _GLIBCXX_EXTERN_TEMPLATE
#define _GLIBCXX_EXTERN_TEMPLATE 0
#endif
#endif
";

const NAME: &str = "wpp-libstdcxx-instantiate.h";

/// The header's path in [`cache_dir`] of `dir` (the runtime library's directory, when known),
/// written when missing or different, through a temporary name so that concurrent
/// compilations never read half of it.
pub fn header(dir: Option<&Path>) -> Result<PathBuf, DriverError> {
    let dir = cache_dir(dir);
    let path = dir.join(NAME);
    if std::fs::read(&path).is_ok_and(|b| b == HEADER.as_bytes()) {
        return Ok(path);
    }
    let tmp = dir.join(format!(".{NAME}.{}.{}", std::process::id(), unique()));
    std::fs::write(&tmp, HEADER)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(DriverError::Temp)?;
    Ok(path)
}
