"""bench/allocator/caching_allocator.py against PyTorch's CUDA caching allocator rules, on sequences whose
outcome follows from c10/cuda/CUDACachingAllocator.cpp by hand."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "allocator"))
from caching_allocator import CachingAllocator, OutOfMemory, replay, smallest_capacity  # noqa: E402

MiB = 1 << 20


class Rules(unittest.TestCase):
    def test_segment_sizes(self):
        a = CachingAllocator()
        a.malloc(100)              # small pool: a 2 MiB segment
        a.malloc(11 * MiB + 1)     # >= 10 MiB: rounded up to 2 MiB; < 1 MiB would remain, so not split
        a.malloc(3 * MiB)          # 1-10 MiB: a 20 MiB segment, split
        self.assertEqual(a.reserved, 2 * MiB + 12 * MiB + 20 * MiB)
        self.assertEqual(a.allocated, 512 + 12 * MiB + 3 * MiB)
        self.assertEqual(a.segments, 3)
        a.malloc(10 * MiB)         # served by the 17 MiB left of the 20 MiB segment: no new segment
        self.assertEqual(a.segments, 3)

    def test_best_fit_splits_and_merges(self):
        a = CachingAllocator()
        x = a.malloc(64 * MiB)
        y = a.malloc(32 * MiB)
        a.free(x)
        a.free(y)
        z = a.malloc(30 * MiB)     # the 32 MiB block is the smallest that fits; 2 MiB remain (> 1 MiB): split
        self.assertEqual(z.size, 30 * MiB)
        self.assertEqual(a.reserved, 96 * MiB)
        w = a.malloc(2 * MiB)      # the 2 MiB remainder of that segment, not the 64 MiB one
        self.assertEqual(w.size, 2 * MiB)
        self.assertEqual(len(a.free_blocks[False]), 1)
        a.free(z)
        a.free(w)                  # both halves free again: one 32 MiB block
        sizes = sorted(e[0] for e in a.free_blocks[False])
        self.assertEqual(sizes, [32 * MiB, 64 * MiB])

    def test_no_split_when_the_rest_is_one_mib_or_less(self):
        a = CachingAllocator()
        a.free(a.malloc(40 * MiB))
        b = a.malloc(39 * MiB)     # 1 MiB would remain: the whole block is handed out
        self.assertEqual(b.size, 40 * MiB)

    def test_fragmentation_needs_a_new_segment(self):
        # A long-lived tensor carved out of a freed segment keeps the segment from serving the size it had.
        events = [("+", 1, 100 * MiB), ("-", 1, 0), ("+", 2, 30 * MiB), ("+", 3, 100 * MiB)]
        a = replay(events)
        self.assertEqual(a.peak_allocated, 130 * MiB)
        self.assertEqual(a.peak_reserved, 200 * MiB)

    def test_out_of_memory_releases_free_segments_first(self):
        events = [("+", 1, 100 * MiB), ("+", 2, 100 * MiB), ("-", 1, 0), ("+", 3, 150 * MiB)]
        self.assertEqual(replay(events).peak_reserved, 350 * MiB)
        a = replay(events, capacity=250 * MiB)   # the free 100 MiB segment is released, then 150 fits
        self.assertEqual(a.reserved, 250 * MiB)
        with self.assertRaises(OutOfMemory):
            replay(events, capacity=248 * MiB)
        unlimited, card = smallest_capacity(events)
        self.assertEqual(card, 250 * MiB)

    def test_a_split_segment_is_not_released(self):
        # The 100 MiB segment holds a live 30 MiB block, so the OOM path cannot return its free 70 MiB.
        events = [("+", 1, 100 * MiB), ("-", 1, 0), ("+", 2, 30 * MiB), ("+", 3, 100 * MiB)]
        with self.assertRaises(OutOfMemory):
            replay(events, capacity=150 * MiB)
        self.assertEqual(smallest_capacity(events)[1], 200 * MiB)


if __name__ == "__main__":
    unittest.main()
