//! The process's allocator, set for a player that runs for hours.
//!
//! glibc's allocator gives a block of 128 KiB or more a memory mapping of
//! its own, returned to the system when freed; but each time such a block
//! is freed it raises that threshold to the block's size (up to 32 MiB).
//! From then on blocks of many megabytes come from the heap, where a freed
//! block below a live one cannot be given back. A software adapter's device
//! memory is such blocks (lavapipe's and llvmpipe's images, swapchains and
//! staging, made and freed as a window resizes and textures come and go),
//! so the heap of a player left running grew by tens of MiB an hour with
//! nothing live growing (`stagehand bench soak`; the note of the change
//! that brought this has the figures).
//!
//! [`large_blocks_apart`] fixes the threshold at 1 MiB: every block from
//! 1 MiB up keeps a mapping of its own, whatever was freed before. Fixing
//! it also fixes the size of free memory a heap keeps at its top before
//! giving it back, which glibc otherwise moves with the threshold (to
//! twice it): left at its 128 KiB default, the decode threads' blocks of
//! a few hundred KiB (an EXR's chunks) were given back and faulted in
//! again on every frame (`stagehand play` of a 4K EXR sequence: 590,000
//! minor faults for 48 frames against 368,000). It is set as glibc would,
//! to twice the threshold.

/// The size from which a block gets a mapping of its own.
pub const APART_FROM: usize = 1 << 20;

/// Fixes the allocator's mapping threshold at [`APART_FROM`]; whether the
/// allocator took it (always false off glibc, where there is nothing to
/// fix). Call it first thing in `main`, before any thread starts.
#[allow(unsafe_code)] // mallopt is a C call, wrapped here once
pub fn large_blocks_apart() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt sets one of the allocator's parameters; it takes
        // the allocator's own lock and touches no memory of ours.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, APART_FROM as libc::c_int) == 1
                && libc::mallopt(libc::M_TRIM_THRESHOLD, 2 * APART_FROM as libc::c_int) == 1
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::large_blocks_apart;

    /// Whether the block at `ptr` is a mapping of its own: glibc puts a
    /// mapped block 16 bytes into a mapping that starts there, while a
    /// block from a heap lies inside the heap's mapping.
    fn mapped_apart(ptr: *const u8) -> bool {
        let start = format!("{:x}-", ptr as usize - 16);
        std::fs::read_to_string("/proc/self/maps")
            .expect("the process's mappings")
            .lines()
            .any(|line| line.starts_with(&start))
    }

    /// Minor page faults of this thread so far.
    #[allow(unsafe_code)] // getrusage is a C call, wrapped here once
    fn faults() -> i64 {
        // SAFETY: an all-zero rusage is a valid value for getrusage to
        // fill; RUSAGE_THREAD asks for the calling thread's counts.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `usage` is a valid, writable rusage.
        unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
        usage.ru_minflt
    }

    #[test]
    fn blocks_made_and_freed_again_and_again_under_the_threshold_are_not_faulted_in_each_time() {
        assert!(large_blocks_apart());
        // On a thread of its own (its own heap), as a decode thread: a
        // 600 KiB block, written and freed, forty times.
        let faults = std::thread::spawn(|| {
            let block = || drop(std::hint::black_box(vec![1u8; 600 << 10]));
            block();
            let before = faults();
            (0..40).for_each(|_| block());
            faults() - before
        })
        .join()
        .unwrap();
        // 150 pages a block: faulting each one in again would be 6,000.
        assert!(
            faults < 300,
            "{faults} minor faults for blocks already touched"
        );
    }

    #[test]
    fn a_freed_large_block_does_not_send_the_next_ones_to_the_heap() {
        assert!(large_blocks_apart());
        // Freed, a 24 MiB block would raise the threshold past the 8 MiB
        // that follows and put it on the heap.
        drop(std::hint::black_box(vec![1u8; 24 << 20]));
        let next = std::hint::black_box(vec![1u8; 8 << 20]);
        assert!(
            mapped_apart(next.as_ptr()),
            "the 8 MiB block after a freed 24 MiB one is not a mapping of its own"
        );
    }
}
