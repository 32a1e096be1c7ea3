package plimsoll

// arena is the bump allocator behind cabi_realloc (realloc_wasm.go). It
// never touches the Go heap: its memory comes from a grow function (the
// runtime's sbrk in a guest), which hands out pages the garbage collector
// does not manage. That is what makes it usable before the Go runtime is
// initialized, and it means an allocation can never start a GC cycle, which
// could call imports (clocks) where the component model forbids them.
//
// The arena keeps its chunks in a fixed array and takes grow as a
// parameter, so a zero arena is ready to use without any initialization
// code having run.
type arena struct {
	chunks [24]chunk
	n      int
}

// chunk is one block of memory from grow: [start, end), used up to next.
type chunk struct {
	start, next, end uintptr
}

// chunkMin is the smallest chunk asked of grow (one wasm page); every
// chunk is a multiple of it.
const chunkMin = 64 << 10

// alloc returns size bytes aligned to align (a power of two), from the
// first chunk with room, or from a new chunk at least twice the size of
// the last one, rounded up to whole pages. grow(n) returns the address of n fresh bytes, or 0 when
// memory is exhausted; then alloc panics (the guest traps: out of memory).
func (a *arena) alloc(size, align uintptr, grow func(n uintptr) uintptr) uintptr {
	if align == 0 || align&(align-1) != 0 {
		panic("plimsoll: cabi_realloc: alignment is not a power of two")
	}
	for i := 0; i < a.n; i++ {
		if p, ok := a.chunks[i].take(size, align); ok {
			return p
		}
	}
	if a.n == len(a.chunks) {
		panic("plimsoll: cabi_realloc: arena has no chunk left")
	}
	n := size + align
	if a.n > 0 {
		if last := &a.chunks[a.n-1]; 2*(last.end-last.start) > n {
			n = 2 * (last.end - last.start)
		}
	}
	// Whole pages: the runtime's sbrk hands out nothing smaller anyway.
	n = (n + chunkMin - 1) &^ (chunkMin - 1)
	start := grow(n)
	if start == 0 {
		panic("plimsoll: cabi_realloc: out of memory")
	}
	c := &a.chunks[a.n]
	*c = chunk{start: start, next: start, end: start + n}
	a.n++
	p, _ := c.take(size, align)
	return p
}

// reset makes all of the arena's memory free again; whatever was allocated
// from it must no longer be used.
func (a *arena) reset() {
	for i := 0; i < a.n; i++ {
		a.chunks[i].next = a.chunks[i].start
	}
}

// take allocates from c if size bytes at alignment align fit.
func (c *chunk) take(size, align uintptr) (uintptr, bool) {
	p := (c.next + align - 1) &^ (align - 1)
	if p < c.next || p > c.end || c.end-p < size {
		return 0, false
	}
	c.next = p + size
	return p, true
}
