//! The free memory inside the process's heap, given back to the system.
//!
//! On a software adapter the device's memory is the process's heap:
//! swapchain images, targets and textures are blocks of megabytes made
//! and freed as a window resizes and frames come and go. glibc's
//! allocator serves blocks that large from the heap once one has been
//! freed (it raises its mapping threshold up to 32 MiB), and gives back
//! only the free memory at the heap's top: a freed block with a live one
//! above it stays resident. A player left running in a window that was
//! resized grew by tens of MiB an hour that way, with nothing live growing
//! (`stagehand bench soak`, and a heap profile).
//!
//! [`give_back`] hands the whole free pages inside the heap back, wherever
//! they lie (`malloc_trim`; a fraction of a millisecond here for a player
//! holding 300 MB). The player calls it every [`GIVE_BACK_EVERY`] while it
//! runs. Pages given back are faulted in again only if the allocator reuses
//! them, once; blocks that are made and freed every frame are not given
//! back in between, as fixing the allocator's threshold would have done
//! (measured: 65,000 more page faults in 12 seconds of a looped 4K movie).

use std::time::{Duration, Instant};

/// How often a running player gives the heap's free pages back.
pub const GIVE_BACK_EVERY: Duration = Duration::from_secs(10);

/// Gives the whole free pages inside the process's heap back to the
/// system; whether any were (always false off glibc, whose allocators
/// keep no such memory or give it back themselves).
#[allow(unsafe_code)] // malloc_trim is a C call, wrapped here once
pub fn give_back() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim takes the allocator's own locks and only
        // releases pages no block holds.
        unsafe { libc::malloc_trim(0) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// Gives the heap's free pages back at most every [`GIVE_BACK_EVERY`].
#[derive(Debug)]
pub struct Keeper {
    last: Instant,
}

impl Default for Keeper {
    fn default() -> Self {
        Self {
            last: Instant::now(),
        }
    }
}

impl Keeper {
    /// Gives the free pages back if [`GIVE_BACK_EVERY`] has passed since
    /// it last did.
    pub fn tend(&mut self) {
        if self.last.elapsed() >= GIVE_BACK_EVERY {
            give_back();
            self.last = Instant::now();
        }
    }
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::give_back;

    const PAGE: usize = 4096;

    /// How many of the whole pages inside `[start, start + len)` are
    /// resident, by `mincore`; `None` if the range is no longer mapped.
    #[allow(unsafe_code)] // mincore is a C call, wrapped here once
    fn resident_pages(start: usize, len: usize) -> Option<usize> {
        let first = start.div_ceil(PAGE) * PAGE;
        let end = (start + len) / PAGE * PAGE;
        let pages = (end - first) / PAGE;
        let mut flags = vec![0u8; pages];
        // SAFETY: mincore reads the page tables of the range, never its
        // memory; `flags` has a byte for each of its pages.
        let done =
            unsafe { libc::mincore(first as *mut libc::c_void, end - first, flags.as_mut_ptr()) };
        (done == 0).then(|| flags.iter().filter(|f| **f & 1 == 1).count())
    }

    #[test]
    fn a_freed_block_below_a_live_one_is_given_back() {
        // Freed, a 24 MiB mapping raises the allocator's threshold past
        // the 8 MiB blocks that follow: they come from the heap.
        drop(std::hint::black_box(vec![1u8; 24 << 20]));
        let below = std::hint::black_box(vec![1u8; 8 << 20]);
        let above = std::hint::black_box(vec![1u8; 8 << 20]);
        let (start, len) = (below.as_ptr() as usize, below.len());
        drop(below);
        // Interior pages only: the allocator writes its own words at
        // the edges of a free block.
        let inner = (start + 16 * PAGE, len - 32 * PAGE);
        let before = resident_pages(inner.0, inner.1).expect("the heap keeps the freed block");
        assert!(
            before > inner.1 / PAGE / 2,
            "the freed block was already given back ({before} pages resident): nothing to show"
        );
        give_back();
        let after = resident_pages(inner.0, inner.1).unwrap_or(0);
        assert!(
            after < before / 8,
            "{after} of the freed block's {before} pages still resident"
        );
        drop(above);
    }
}
