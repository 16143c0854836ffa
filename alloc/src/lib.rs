//! The settings of the memory allocator that svc's binaries use (mimalloc, the `mimalloc`
//! crate's global allocator) which only its C interface reaches.
//!
//! This crate is the workspace's one exception to `unsafe_code = "forbid"`: the calls below are
//! foreign functions, so Rust cannot check them, but each takes plain integers, touches no
//! memory of ours and is documented by mimalloc as callable at any time from any thread.

use libmimalloc_sys as sys;

/// `mi_option_purge_delay` in mimalloc's `mimalloc.h` (the same index in its v2, which svc
/// builds, and v3): how many milliseconds freed memory waits before it is returned to the
/// system.
const PURGE_DELAY: sys::mi_option_t = 15;

/// The environment variable by which mimalloc reads the purge delay at start.
pub const PURGE_DELAY_ENV: &str = "MIMALLOC_PURGE_DELAY";

/// Makes the allocator return memory to the system as soon as it is freed, unless the
/// process's environment sets [`PURGE_DELAY_ENV`] (then mimalloc has read that, and it stays).
///
/// By default mimalloc delays the return (10 ms in v2, a second in v3), and performs it only
/// when the thread that freed the memory allocates again: an idle server can keep the peak of
/// its last large response resident. Returns whether it changed the setting.
pub fn return_freed_memory_at_once() -> bool {
    if std::env::var_os(PURGE_DELAY_ENV).is_some() {
        return false;
    }
    set_purge_delay_ms(0);
    true
}

/// Sets the purge delay, in milliseconds (`-1`: never return memory).
pub fn set_purge_delay_ms(ms: i64) {
    let ms = std::os::raw::c_long::try_from(ms).unwrap_or(std::os::raw::c_long::MAX);
    // SAFETY: `mi_option_set` takes an option index and a value by value; an index out of range
    // is ignored by mimalloc, and options may be set at any time.
    unsafe { sys::mi_option_set(PURGE_DELAY, ms) }
}

/// The purge delay in effect, in milliseconds.
pub fn purge_delay_ms() -> i64 {
    // SAFETY: `mi_option_get` takes an option index by value and reads a global.
    let ms = unsafe { sys::mi_option_get(PURGE_DELAY) };
    // `c_long` is `i64` here, `i32` on other targets.
    #[allow(clippy::useless_conversion)]
    i64::from(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The index names the purge delay: mimalloc's documented default (10 ms in v2, the line
    /// svc builds; a different option at this index would hold another value), and a setting
    /// reads back.
    #[test]
    fn the_purge_delay_is_the_option_set() {
        if std::env::var_os(PURGE_DELAY_ENV).is_none() {
            assert_eq!(purge_delay_ms(), 10);
        }
        set_purge_delay_ms(0);
        assert_eq!(purge_delay_ms(), 0);
        set_purge_delay_ms(250);
        assert_eq!(purge_delay_ms(), 250);
    }
}
