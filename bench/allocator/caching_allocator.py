"""PyTorch's CUDA caching allocator, replayed: what `max_memory_reserved` and the smallest card that
runs a step would be for a recorded sequence of allocations and frees.

The rules are those of the native allocator in its default configuration (no max_split_size, no
expandable segments, one stream), read in c10/cuda/CUDACachingAllocator.cpp (pytorch/pytorch @ 001074d2):
  - sizes round up to 512 B (round_size; kMinBlockSize);
  - requests of 1 MiB or less use the small pool, larger ones the large pool (get_pool; kSmallSize);
  - a request takes the smallest free block of its pool that is large enough, the lowest address
    among equals (get_free_block: a std::set ordered by stream, size, address; lower_bound);
  - a block larger than the request is split when what remains is >= 512 B (small pool) or > 1 MiB
    (large pool) (should_split);
  - with no free block, a new segment is cudaMalloc'ed: 2 MiB for small requests, 20 MiB for requests
    under 10 MiB, else the request rounded up to 2 MiB (get_allocation_size; kSmallBuffer, kLargeBuffer,
    kMinLargeAlloc, kRoundLarge);
  - when cudaMalloc fails, every cached segment that is wholly free is released and the allocation
    retried; if it fails again the step is out of memory (malloc: alloc_block, then
    release_cached_blocks; release_available_cached_blocks only acts with max_split_size set);
  - a freed block merges with free neighbours of the same segment (free_block, try_merge_blocks).
Stream-ordered reuse across streams (recordStream) and CUDA graphs' private pools are not modelled.

Events are (op, key, bytes) with op "+" (allocate) or "-" (free the allocation `key`).
"""
import bisect

MIN_BLOCK = 512
SMALL_SIZE = 1 << 20
SMALL_BUFFER = 2 << 20
LARGE_BUFFER = 20 << 20
MIN_LARGE_ALLOC = 10 << 20
ROUND_LARGE = 2 << 20


def round_size(n):
    return MIN_BLOCK if n < MIN_BLOCK else (n + MIN_BLOCK - 1) // MIN_BLOCK * MIN_BLOCK


def allocation_size(size):
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return (size + ROUND_LARGE - 1) // ROUND_LARGE * ROUND_LARGE


class OutOfMemory(Exception):
    pass


class Block:
    __slots__ = ("addr", "size", "small", "prev", "next", "allocated")

    def __init__(self, addr, size, small):
        self.addr, self.size, self.small = addr, size, small
        self.prev = self.next = None
        self.allocated = False


class CachingAllocator:
    def __init__(self, capacity=None):
        self.capacity = capacity           # bytes cudaMalloc may hand out in all; None: unlimited
        self.free_blocks = {True: [], False: []}   # per pool, sorted (size, addr, block)
        self.reserved = self.allocated = 0
        self.peak_reserved = self.peak_allocated = 0
        self.segments = 0
        self._next_addr = 0

    def _insert(self, b):
        bisect.insort(self.free_blocks[b.small], (b.size, b.addr, b))

    def _remove(self, b):
        pool = self.free_blocks[b.small]
        i = bisect.bisect_left(pool, (b.size, b.addr))
        assert pool[i][2] is b
        pool.pop(i)

    def _cuda_malloc(self, size, small):
        if self.capacity is not None and self.reserved + size > self.capacity:
            return None
        b = Block(self._next_addr, size, small)
        self._next_addr += size + (1 << 44)    # segments never touch: no merge across them
        self.segments += 1
        self.reserved += size
        self.peak_reserved = max(self.peak_reserved, self.reserved)
        return b

    def _release_cached_segments(self):
        for small, pool in self.free_blocks.items():
            kept = []
            for entry in pool:
                b = entry[2]
                if b.prev is None and b.next is None:
                    self.reserved -= b.size
                    self.segments -= 1
                else:
                    kept.append(entry)
            self.free_blocks[small] = kept

    def malloc(self, nbytes):
        size = round_size(nbytes)
        small = size <= SMALL_SIZE
        pool = self.free_blocks[small]
        i = bisect.bisect_left(pool, (size, -1))
        if i < len(pool):
            block = pool.pop(i)[2]
        else:
            segment = allocation_size(size)
            block = self._cuda_malloc(segment, small)
            if block is None:
                self._release_cached_segments()
                block = self._cuda_malloc(segment, small)
            if block is None:
                raise OutOfMemory(size)
        remaining = block.size - size
        if remaining >= MIN_BLOCK if small else remaining > SMALL_SIZE:
            rest = Block(block.addr + size, remaining, small)
            rest.prev, rest.next = block, block.next
            if block.next is not None:
                block.next.prev = rest
            block.next = rest
            block.size = size
            self._insert(rest)
        block.allocated = True
        self.allocated += block.size
        self.peak_allocated = max(self.peak_allocated, self.allocated)
        return block

    def free(self, b):
        b.allocated = False
        self.allocated -= b.size
        p = b.prev
        if p is not None and not p.allocated:
            self._remove(p)
            b.addr, b.size, b.prev = p.addr, p.size + b.size, p.prev
            if p.prev is not None:
                p.prev.next = b
        n = b.next
        if n is not None and not n.allocated:
            self._remove(n)
            b.size, b.next = b.size + n.size, n.next
            if n.next is not None:
                n.next.prev = b
        self._insert(b)


def replay(events, capacity=None):
    """The allocator after the events (raises OutOfMemory when `capacity` is too small)."""
    a = CachingAllocator(capacity)
    live = {}
    for op, key, nbytes in events:
        if op == "+":
            live[key] = a.malloc(nbytes)
        else:
            block = live.pop(key, None)
            if block is not None:
                a.free(block)
    return a


def smallest_capacity(events, step=ROUND_LARGE):
    """(unlimited replay, the smallest capacity in `step`s that runs the events without an OOM)."""
    unlimited = replay(events)
    lo = max(0, unlimited.peak_allocated // step * step - step)   # never enough: the tensors alone need more
    hi = unlimited.peak_reserved                      # always enough: nothing is ever released
    while hi - lo > step:
        mid = (lo + hi) // 2 // step * step
        try:
            replay(events, mid)
            hi = mid
        except OutOfMemory:
            lo = mid
    return unlimited, hi
