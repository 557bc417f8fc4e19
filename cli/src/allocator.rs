//! The binary's allocator: mimalloc, asked for plain blocks whenever a plain block will do.
//!
//! A run allocates and frees small objects at a high rate (frames, records, history events),
//! where glibc's malloc is among a run's largest costs. The `mimalloc` crate's own wrapper asks
//! for every block through mimalloc's aligned entry points, which take a longer path than the
//! plain ones even for the word alignment nearly every Rust type has. Every mimalloc block is a
//! whole number of words from a word-aligned start, so a layout aligned to a word or less is
//! served by the plain entry points; a wider alignment still goes to the aligned ones. The
//! allocator changes no history: nothing in a simulation reads an address.
//!
//! The one module of the workspace with unsafe code: a global allocator cannot be written
//! without it.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// The alignment every mimalloc block has whatever its size.
const WORD: usize = std::mem::size_of::<usize>();

/// mimalloc through its plain entry points where the layout allows.
pub struct Allocator;

// SAFETY: every path hands the layout's size to mimalloc and returns its block (or null), which
// is aligned to a word always and to `layout.align()` when the aligned entry point is used.
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        unsafe {
            if layout.align() <= WORD {
                mi::mi_malloc(layout.size()) as *mut u8
            } else {
                mi::mi_malloc_aligned(layout.size(), layout.align()) as *mut u8
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        unsafe {
            if layout.align() <= WORD {
                mi::mi_zalloc(layout.size()) as *mut u8
            } else {
                mi::mi_zalloc_aligned(layout.size(), layout.align()) as *mut u8
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        unsafe { mi::mi_free(ptr as *mut c_void) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        unsafe {
            if layout.align() <= WORD {
                mi::mi_realloc(ptr as *mut c_void, new_size) as *mut u8
            } else {
                mi::mi_realloc_aligned(ptr as *mut c_void, new_size, layout.align()) as *mut u8
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every size class and alignment a program asks for comes back aligned as asked, holds
    /// what was written into it through a reallocation, and zeroed memory reads as zeros.
    #[test]
    fn blocks_are_aligned_as_asked_and_keep_their_contents() {
        let a = Allocator;
        for align in [1, 2, 4, 8, 16, 32, 64, 4096] {
            for size in (1..200).chain([1000, 4095, 4096, 70_000, 1 << 21]) {
                let layout = Layout::from_size_align(size, align).unwrap();
                unsafe {
                    let p = a.alloc(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "size {size} align {align}");
                    std::ptr::write_bytes(p, 0xa5, size);
                    let grown = size * 2 + 3;
                    let q = a.realloc(p, layout, grown);
                    assert_eq!(q as usize % align, 0, "realloc of size {size} align {align}");
                    assert!((0..size).all(|i| *q.add(i) == 0xa5), "size {size} align {align}");
                    a.dealloc(q, Layout::from_size_align(grown, align).unwrap());
                    let z = a.alloc_zeroed(layout);
                    assert_eq!(z as usize % align, 0);
                    assert!((0..size).all(|i| *z.add(i) == 0), "zeroed size {size} align {align}");
                    a.dealloc(z, layout);
                }
            }
        }
    }
}
