//! The process's peak resident set over a repetition, from Linux's
//! `/proc/self`: writing `5` to `clear_refs` resets the peak (`VmHWM`) to
//! the current resident set (Linux 4.0 and later), and `VmHWM` read at the
//! end is the highest it reached since. Elsewhere, or where the reset is
//! refused, the peak is not measured (`None`) rather than guessed.
//!
//! Before the reset the C library's allocator gives its free pages back
//! (`malloc_trim`, glibc): otherwise the memory earlier repetitions freed
//! stays resident in its free lists, a repetition's garbage and backlog
//! reuse it, and the peak shows no growth at all. The trim runs before the
//! measured window, so it costs the workers nothing.

/// Returns the allocator's free pages to the system, resets the peak
/// resident set to the current one and returns the current one in bytes;
/// `None` if the reset or the read is not possible here.
pub fn reset_peak() -> Option<u64> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of the allocator, under
    // its own locks; 0 asks it to keep no extra padding.
    unsafe {
        libc::malloc_trim(0);
    }
    std::fs::write("/proc/self/clear_refs", b"5").ok()?;
    status_kib("VmRSS:").map(|kib| kib * 1024)
}

/// The peak resident set since [`reset_peak`] returned `start`, less
/// `start`, in bytes.
pub fn peak_growth(start: u64) -> Option<u64> {
    status_kib("VmHWM:").map(|kib| (kib * 1024).saturating_sub(start))
}

/// A `kB` field of `/proc/self/status`.
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_kib(&status, field)
}

fn parse_kib(status: &str, field: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(field))?;
    line[field.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields_parse() {
        let status = "Name:\tx\nVmHWM:\t   12345 kB\nVmRSS:\t    2048 kB\n";
        assert_eq!(parse_kib(status, "VmHWM:"), Some(12345));
        assert_eq!(parse_kib(status, "VmRSS:"), Some(2048));
        assert_eq!(parse_kib(status, "VmSwap:"), None);
    }

    #[test]
    fn touching_memory_raises_the_peak_where_it_can_be_measured() {
        let Some(start) = reset_peak() else {
            return; // not Linux, or the reset is refused: nothing to check
        };
        let mut v = vec![0u8; 64 << 20];
        for i in (0..v.len()).step_by(4096) {
            v[i] = 1;
        }
        std::hint::black_box(&v);
        let grown = peak_growth(start).expect("VmHWM readable where VmRSS was");
        // Other tests allocate and free concurrently, so only a lower
        // bound with room: most of the 64 MiB touched shows.
        assert!(grown >= 32 << 20, "{grown}");
    }
}
