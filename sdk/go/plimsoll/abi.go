package plimsoll

// The canonical ABI of the two broker imports, written by hand (no
// generator is needed for two functions). This file is pure Go with no
// unsafe code: guest memory is a []byte plus the address of its first byte,
// so the unit tests run it on the host. abi_wasm.go calls the imports.
//
// plimsoll:sandbox/broker@0.1.3, core signatures (every value an i32):
//
//	call(api: string, req: request) -> result<response, call-error>
//	  (api.ptr, api.len, method.ptr, method.len, path.ptr, path.len,
//	   headers.ptr, headers.len, body.ptr, body.len, ret)         11 params
//	call-origin(origin: string, req: request, timeout-ms: option<u32>) -> ...
//	  (origin.ptr, origin.len, <the 8 request params>,
//	   timeout.is-some, timeout.value, ret)                       13 params
//
// A list<tuple<string, string>> is an array of 16-byte elements, align 4:
// name.ptr @0, name.len @4, value.ptr @8, value.len @12.
//
// The result goes to the return area `ret` (24 bytes, align 4):
//
//	@0   u8  0 = ok, 1 = err
//	ok:  @4  u16 status; @8 headers.ptr; @12 headers.len;
//	     @16 body.ptr; @20 body.len
//	err: @4  u8 call-error case (0 denied, 1 budget-exhausted,
//	     2 request-too-large, 3 response-too-large, 4 timeout, 5 upstream);
//	     @8 string.ptr, @12 string.len (denied and upstream only)
//
// The host allocates the response's lists and strings with the guest's
// cabi_realloc (realloc_wasm.go); liftResult copies all of them into Go
// memory, so nothing lifted points into that scratch memory afterwards.

import (
	"encoding/binary"
	"fmt"
)

const (
	retAreaSize = 24 // the result<response, call-error> return area
	headerSize  = 16 // one tuple<string, string>
)

var le = binary.LittleEndian

// loweredSize is the size of the buffer lowerRequest fills: the return
// area, the header table, then every string's bytes and the body.
func loweredSize(target string, req Request) int {
	n := retAreaSize + headerSize*len(req.Headers) + len(target) + len(req.Method) + len(req.Path) + len(req.Body)
	for _, h := range req.Headers {
		n += len(h.Name) + len(h.Value)
	}
	return n
}

// lowerRequest lays target (the grant name or the origin) and req out in
// buf, whose first byte is at guest address base (4-byte aligned), and
// returns the 10 flat parameters both imports start with. The return area
// is buf[:retAreaSize], at address base.
func lowerRequest(buf []byte, base uint32, target string, req Request) [10]uint32 {
	if len(buf) != loweredSize(target, req) {
		panic("plimsoll: lowerRequest: buffer has the wrong size")
	}
	table := retAreaSize
	w := lowerWriter{buf: buf, base: base, off: table + headerSize*len(req.Headers)}
	var p [10]uint32
	p[0], p[1] = w.putString(target)
	p[2], p[3] = w.putString(req.Method)
	p[4], p[5] = w.putString(req.Path)
	p[6], p[7] = base+uint32(table), uint32(len(req.Headers))
	for i, h := range req.Headers {
		e := buf[table+headerSize*i:]
		namePtr, nameLen := w.putString(h.Name)
		valuePtr, valueLen := w.putString(h.Value)
		le.PutUint32(e[0:], namePtr)
		le.PutUint32(e[4:], nameLen)
		le.PutUint32(e[8:], valuePtr)
		le.PutUint32(e[12:], valueLen)
	}
	p[8], p[9] = w.put(req.Body)
	return p
}

// lowerWriter appends byte strings to a lowering buffer.
type lowerWriter struct {
	buf  []byte
	base uint32
	off  int
}

// put copies b to the buffer and returns its guest address and length.
func (w *lowerWriter) put(b []byte) (ptr, length uint32) {
	ptr = w.base + uint32(w.off)
	w.off += copy(w.buf[w.off:], b)
	return ptr, uint32(len(b))
}

// putString is put for a string.
func (w *lowerWriter) putString(s string) (ptr, length uint32) {
	ptr = w.base + uint32(w.off)
	w.off += copy(w.buf[w.off:], s)
	return ptr, uint32(len(s))
}

// lowerOption flattens option<u32>: (0, 0) for none, (1, v) for some(v).
func lowerOption(v *uint32) (isSome, value uint32) {
	if v == nil {
		return 0, 0
	}
	return 1, *v
}

// memory returns a view of n bytes of guest memory at address ptr. In a
// guest it is linear memory itself; the tests pass a fake.
type memory func(ptr, n uint32) []byte

// liftResult reads the result<response, call-error> in the return area ret
// (retAreaSize bytes), copying every list and string out of mem. A
// discriminant outside the WIT's cases means the host broke the ABI; like
// generated bindings, it panics (the run traps) rather than guess.
func liftResult(ret []byte, mem memory) (Response, error) {
	switch ret[0] {
	case 0:
		return Response{
			Status:  int(le.Uint16(ret[4:])),
			Headers: liftHeaders(mem, le.Uint32(ret[8:]), le.Uint32(ret[12:])),
			Body:    liftBytes(mem, le.Uint32(ret[16:]), le.Uint32(ret[20:])),
		}, nil
	case 1:
		kind := ErrorKind(ret[4])
		switch kind {
		case Denied, Upstream:
			return Response{}, &CallError{Kind: kind, Detail: string(liftBytes(mem, le.Uint32(ret[8:]), le.Uint32(ret[12:])))}
		case BudgetExhausted, RequestTooLarge, ResponseTooLarge, Timeout:
			return Response{}, &CallError{Kind: kind}
		}
		panic(fmt.Sprintf("plimsoll: the broker returned call-error case %d, which WIT does not define", ret[4]))
	}
	panic(fmt.Sprintf("plimsoll: the broker returned result discriminant %d, which is neither ok nor err", ret[0]))
}

// liftHeaders copies a list<tuple<string, string>> of n elements at ptr.
func liftHeaders(mem memory, ptr, n uint32) []Header {
	if n == 0 {
		return nil
	}
	if uint64(n)*headerSize >= 1<<32 {
		panic(fmt.Sprintf("plimsoll: the broker returned %d headers, more than guest memory holds", n))
	}
	table := mem(ptr, n*headerSize)
	headers := make([]Header, n)
	for i := range headers {
		e := table[headerSize*i:]
		headers[i] = Header{
			Name:  string(liftBytes(mem, le.Uint32(e[0:]), le.Uint32(e[4:]))),
			Value: string(liftBytes(mem, le.Uint32(e[8:]), le.Uint32(e[12:]))),
		}
	}
	return headers
}

// liftBytes copies n bytes at ptr into a new slice (nil when n is 0).
func liftBytes(mem memory, ptr, n uint32) []byte {
	if n == 0 {
		return nil
	}
	return append([]byte(nil), mem(ptr, n)...)
}
