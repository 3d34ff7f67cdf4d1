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
//! 1 MiB up keeps a mapping of its own, whatever was freed before.

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
        unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, APART_FROM as libc::c_int) == 1 }
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
