//! The settings of the memory allocator that svc's binaries use (mimalloc, the `mimalloc`
//! crate's global allocator) which only its C interface reaches.
//!
//! This crate is the workspace's one exception to `unsafe_code = "forbid"`: the calls below are
//! foreign functions, so Rust cannot check them, but each takes plain integers, touches no
//! memory of ours and is documented by mimalloc as callable at any time from any thread.

use libmimalloc_sys as sys;
use std::sync::atomic::{AtomicBool, Ordering};

/// `mi_option_purge_delay` in mimalloc's `mimalloc.h` (the same index in its v2, which svc
/// builds, and v3): how many milliseconds freed memory waits before it is returned to the
/// system.
const PURGE_DELAY: sys::mi_option_t = 15;

/// The environment variable by which mimalloc reads the purge delay at start.
pub const PURGE_DELAY_ENV: &str = "MIMALLOC_PURGE_DELAY";

/// How long memory freed by a thread waits before the allocator returns it to the system, in
/// milliseconds, when the process's environment does not set [`PURGE_DELAY_ENV`].
///
/// At 0 every page a request frees goes back to the system at once, and the next request's
/// buffers come back from the kernel zeroed: under the Image API's cold transforms that was a
/// fifth of the server's CPU, in page faults. A delay lets a busy thread reuse its pages; an idle
/// thread's pages go back through [`return_freed_memory`], which the server calls on a timer.
pub const PURGE_DELAY_MS: i64 = 1000;

/// Sets the purge delay to [`PURGE_DELAY_MS`], unless the process's environment sets
/// [`PURGE_DELAY_ENV`] (then mimalloc has read that, and it stays). Returns whether it changed the
/// setting.
///
/// mimalloc purges a thread's expired memory only when that thread allocates again: a process
/// that sets a delay must call [`return_freed_memory`] from its threads that go idle, or an idle
/// server keeps the peak of its last large response.
pub fn delay_returns() -> bool {
    if std::env::var_os(PURGE_DELAY_ENV).is_some() {
        return false;
    }
    set_purge_delay_ms(PURGE_DELAY_MS);
    DELAYED.store(true, Ordering::Relaxed);
    true
}

/// Set once [`delay_returns`] set the delay.
static DELAYED: AtomicBool = AtomicBool::new(false);

/// Whether [`delay_returns`] set the delay, so that the process's idle threads must call
/// [`return_freed_memory`].
pub fn returns_delayed() -> bool {
    DELAYED.load(Ordering::Relaxed)
}

/// Returns to the system what the calling thread's heap holds freed, delay or not, with the
/// memory of heaps whose threads have ended (which no thread purges on its own) and of the
/// allocator's shared arenas. Costs a walk of the calling thread's pages: call it on a timer,
/// not per request.
pub fn return_freed_memory() {
    // SAFETY: `mi_collect` takes a flag by value and works on the calling thread's heap and the
    // allocator's shared lists, which mimalloc locks; it may be called from any thread at any
    // time.
    unsafe { sys::mi_collect(true) }
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
    use std::sync::Mutex;

    /// The binaries' allocator: without it the tests' memory would be glibc's.
    #[global_allocator]
    static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

    /// The purge delay is the process's: the tests that set it take turns.
    static SETTING: Mutex<()> = Mutex::new(());

    /// The index names the purge delay: mimalloc's documented default (10 ms in v2, the line
    /// svc builds; a different option at this index would hold another value), and a setting
    /// reads back.
    #[test]
    fn the_purge_delay_is_the_option_set() {
        let _turn = SETTING.lock().unwrap_or_else(|e| e.into_inner());
        if std::env::var_os(PURGE_DELAY_ENV).is_none() {
            assert_eq!(purge_delay_ms(), 10);
        }
        set_purge_delay_ms(0);
        assert_eq!(purge_delay_ms(), 0);
        set_purge_delay_ms(250);
        assert_eq!(purge_delay_ms(), 250);
    }

    /// With a delay of a minute, a freed 64 MiB stays resident until `return_freed_memory`
    /// returns it (what the server's timer relies on), and then leaves the process's memory.
    #[test]
    fn freed_memory_goes_back_when_collected() {
        let _turn = SETTING.lock().unwrap_or_else(|e| e.into_inner());
        let Some(before) = resident_kib() else { return };
        set_purge_delay_ms(60_000);
        // Smaller than mimalloc's huge objects (which go straight back to the system), touched
        // so that it is resident.
        let blocks: Vec<Vec<u8>> = (0..64).map(|i| vec![i as u8 | 1; 1 << 20]).collect();
        assert!(blocks.iter().all(|b| b[4096] != 0));
        let held = resident_kib().unwrap();
        assert!(held > before + 60 * 1024, "{before} KiB, then {held} KiB");
        drop(blocks);
        let kept = resident_kib().unwrap();
        return_freed_memory();
        let returned = resident_kib().unwrap();
        set_purge_delay_ms(10);
        assert!(
            kept > before + 48 * 1024,
            "freed memory was returned before the collect: {before} KiB, {held} KiB, then {kept} KiB"
        );
        assert!(
            returned < before + 16 * 1024,
            "the collect returned too little: {before} KiB, {held} KiB, {kept} KiB, then {returned} KiB"
        );
    }

    /// The process's resident memory in KiB, from `/proc` (None where there is none).
    fn resident_kib() -> Option<u64> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }
}
