//go:build wasip1

package plimsoll

import "unsafe"

// cabi_realloc is the allocator the component model uses to put values
// into guest memory. Two callers use it:
//
//   - The WASI preview1 adapter, which allocates its state and stack with
//     it on its first call. That first call happens inside _initialize,
//     while the Go runtime is still starting (its clock is read before the
//     heap exists), so cabi_realloc must not use the Go heap: a naive
//     make() traps at instantiation (runtime.throw, "uninitialized
//     element", a memory fault). These allocations are permanent.
//   - The host, lifting a broker call's response into guest memory. These
//     allocations live until the SDK has copied the response into Go
//     values; then the scratch arena is reset for the next call.
//
// Both get memory from runtime.sbrk, the Go runtime's own page allocator
// on wasm, as componentize-go does (go-modules#184): sbrk works before
// the runtime is initialized, and pages it returns are never touched by
// the garbage collector. A static array used as a bump arena did not work.
// Linking to runtime.sbrk needs -ldflags=-checklinkname=0.

//go:linkname sbrk runtime.sbrk
func sbrk(n uintptr) unsafe.Pointer

var (
	// permanent serves every allocation made outside a broker call.
	permanent arena
	// scratch serves the host's allocations during a broker call.
	scratch arena
	// inCall is set while a broker import is running.
	inCall bool
)

//go:wasmexport cabi_realloc
func cabiRealloc(oldPtr, oldSize, align, newSize uint32) uint32 {
	a := &permanent
	if inCall {
		a = &scratch
	}
	p := a.alloc(uintptr(newSize), uintptr(align), growLinear)
	if oldSize > 0 {
		n := min(oldSize, newSize)
		copy(guestBytes(uint32(p), n), guestBytes(oldPtr, n))
	}
	return uint32(p)
}

// growLinear takes n bytes of fresh linear memory from the runtime.
func growLinear(n uintptr) uintptr {
	return uintptr(sbrk(n))
}

// guestBytes is a view of n bytes of linear memory at address ptr.
func guestBytes(ptr, n uint32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(uintptr(ptr))), n)
}
