//go:build wasip1

package plimsoll

import (
	"sync"
	"unsafe"
)

// The broker imports; abi.go documents their parameters and return area.

//go:wasmimport plimsoll:sandbox/broker@0.1.3 call
func importCall(apiPtr, apiLen, methodPtr, methodLen, pathPtr, pathLen, headersPtr, headersLen, bodyPtr, bodyLen, ret uint32)

//go:wasmimport plimsoll:sandbox/broker@0.1.3 call-origin
func importCallOrigin(originPtr, originLen, methodPtr, methodLen, pathPtr, pathLen, headersPtr, headersLen, bodyPtr, bodyLen, timeoutIsSome, timeoutValue, ret uint32)

var (
	// callMu serializes broker calls: the scratch arena and callBuf belong
	// to one call at a time. The host blocks the whole guest during a call
	// anyway, so this costs nothing.
	callMu sync.Mutex
	// callBuf holds the lowered request and the return area while a call
	// runs. Keeping it in a package variable puts it on the Go heap, which
	// never moves; a goroutine stack, where escape analysis could otherwise
	// place a small buffer, may be moved while the host still holds its
	// address.
	callBuf []uint64
)

func brokerCall(api string, req Request) (Response, error) {
	return invoke(api, req, func(p *[10]uint32, ret uint32) {
		importCall(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], ret)
	})
}

func brokerCallOrigin(origin string, req Request, timeoutMs *uint32) (Response, error) {
	isSome, value := lowerOption(timeoutMs)
	return invoke(origin, req, func(p *[10]uint32, ret uint32) {
		importCallOrigin(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], isSome, value, ret)
	})
}

// invoke lowers target and req into callBuf, runs one import with the
// return area at the start of callBuf, lifts the result (copying it out of
// the scratch arena) and resets the scratch arena.
func invoke(target string, req Request, call func(p *[10]uint32, ret uint32)) (Response, error) {
	callMu.Lock()
	defer callMu.Unlock()

	size := loweredSize(target, req)
	callBuf = make([]uint64, (size+7)/8)
	defer func() { callBuf = nil }()
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&callBuf[0])), size)
	base := uint32(uintptr(unsafe.Pointer(&callBuf[0])))
	params := lowerRequest(buf, base, target, req)

	inCall = true
	call(&params, base)
	inCall = false

	resp, err := liftResult(buf[:retAreaSize], guestBytes)
	scratch.reset()
	return resp, err
}
