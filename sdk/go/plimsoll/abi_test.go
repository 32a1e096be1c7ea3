package plimsoll

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

// fakeMemory is guest memory for the tests: bytes starting at address base.
type fakeMemory struct {
	base uint32
	mem  []byte
}

func (m *fakeMemory) view(ptr, n uint32) []byte {
	return m.mem[ptr-m.base : ptr-m.base+n]
}

// put appends b (at alignment 4) and returns its address.
func (m *fakeMemory) put(b []byte) uint32 {
	for len(m.mem)%4 != 0 {
		m.mem = append(m.mem, 0xaa)
	}
	p := m.base + uint32(len(m.mem))
	m.mem = append(m.mem, b...)
	return p
}

func u32s(vs ...uint32) []byte {
	b := make([]byte, 0, 4*len(vs))
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}

func TestLowerRequestLayout(t *testing.T) {
	req := Request{
		Method:  "POST",
		Path:    "/v1/echo",
		Headers: []Header{{"x-a", "1"}, {"x-conformance-in", ""}},
		Body:    []byte{0, 0xff, 0},
	}
	const base = 0x10000
	buf := make([]byte, loweredSize("orders", req))
	p := lowerRequest(buf, base, "orders", req)
	mem := &fakeMemory{base: base, mem: buf}
	str := func(ptr, n uint32) string { return string(mem.view(ptr, n)) }

	if got := str(p[0], p[1]); got != "orders" {
		t.Errorf("api = %q", got)
	}
	if got := str(p[2], p[3]); got != "POST" {
		t.Errorf("method = %q", got)
	}
	if got := str(p[4], p[5]); got != "/v1/echo" {
		t.Errorf("path = %q", got)
	}
	if p[6] != base+retAreaSize || p[7] != 2 {
		t.Errorf("headers at %#x len %d, want %#x len 2", p[6], p[7], base+retAreaSize)
	}
	if p[6]%4 != 0 {
		t.Errorf("header table %#x is not 4-byte aligned", p[6])
	}
	table := mem.view(p[6], p[7]*headerSize)
	for i, want := range req.Headers {
		e := table[headerSize*i:]
		le := binary.LittleEndian
		name := str(le.Uint32(e[0:]), le.Uint32(e[4:]))
		value := str(le.Uint32(e[8:]), le.Uint32(e[12:]))
		if name != want.Name || value != want.Value {
			t.Errorf("header %d = %q: %q, want %q: %q", i, name, value, want.Name, want.Value)
		}
	}
	if got := mem.view(p[8], p[9]); !bytes.Equal(got, req.Body) {
		t.Errorf("body = %x", got)
	}
	if !bytes.Equal(buf[:retAreaSize], make([]byte, retAreaSize)) {
		t.Errorf("the return area is not left zero: %x", buf[:retAreaSize])
	}
}

func TestLowerRequestEmpty(t *testing.T) {
	buf := make([]byte, loweredSize("", Request{}))
	if len(buf) != retAreaSize {
		t.Fatalf("size %d, want %d", len(buf), retAreaSize)
	}
	p := lowerRequest(buf, 0x2000, "", Request{})
	for i := 1; i < 10; i += 2 {
		if p[i] != 0 {
			t.Errorf("length param %d = %d, want 0", i, p[i])
		}
	}
}

func TestLowerOption(t *testing.T) {
	if s, v := lowerOption(nil); s != 0 || v != 0 {
		t.Errorf("none = (%d, %d)", s, v)
	}
	ms := uint32(250)
	if s, v := lowerOption(&ms); s != 1 || v != 250 {
		t.Errorf("some(250) = (%d, %d)", s, v)
	}
}

func TestLiftOk(t *testing.T) {
	mem := &fakeMemory{base: 0x8000}
	name, value := mem.put([]byte("x-conformance-auth")), mem.put([]byte("ok"))
	empty := mem.put(nil)
	table := mem.put(u32s(name, 18, value, 2, empty, 0, empty, 0))
	body := mem.put([]byte{0, 0xff, 0xfe, 0x80})

	ret := make([]byte, retAreaSize)
	ret[0] = 0
	binary.LittleEndian.PutUint16(ret[4:], 200)
	copy(ret[8:], u32s(table, 2, body, 4))

	resp, err := liftResult(ret, mem.view)
	if err != nil {
		t.Fatal(err)
	}
	want := Response{
		Status:  200,
		Headers: []Header{{"x-conformance-auth", "ok"}, {"", ""}},
		Body:    []byte{0, 0xff, 0xfe, 0x80},
	}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("got %+v, want %+v", resp, want)
	}
	// The lifted values are copies: scribbling over the memory (the SDK
	// resets its scratch arena after each call) changes nothing.
	for i := range mem.mem {
		mem.mem[i] = 0
	}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("the response aliases guest memory: %+v", resp)
	}
	if resp.Header("X-Conformance-Auth") != "ok" || resp.Text() != "\x00\xff\xfe\x80" {
		t.Errorf("Header/Text: %q %q", resp.Header("X-Conformance-Auth"), resp.Text())
	}
}

func TestLiftEmptyOk(t *testing.T) {
	ret := make([]byte, retAreaSize)
	binary.LittleEndian.PutUint16(ret[4:], 204)
	resp, err := liftResult(ret, (&fakeMemory{}).view)
	if err != nil || resp.Status != 204 || resp.Headers != nil || resp.Body != nil {
		t.Errorf("got %+v, %v", resp, err)
	}
}

func TestLiftErrors(t *testing.T) {
	for kind, name := range kindNames {
		mem := &fakeMemory{base: 0x100}
		msg := mem.put([]byte("unknown grant"))
		ret := make([]byte, retAreaSize)
		ret[0], ret[4] = 1, byte(kind)
		copy(ret[8:], u32s(msg, 13))

		_, err := liftResult(ret, mem.view)
		var ce *CallError
		if !errors.As(err, &ce) {
			t.Fatalf("case %d: %T is not a *CallError", kind, err)
		}
		if ce.Kind != ErrorKind(kind) || ce.Kind.String() != name {
			t.Errorf("case %d: kind %v", kind, ce.Kind)
		}
		wantDetail := ""
		if ce.Kind == Denied || ce.Kind == Upstream {
			wantDetail = "unknown grant"
		}
		if ce.Detail != wantDetail {
			t.Errorf("%s: detail %q, want %q", name, ce.Detail, wantDetail)
		}
	}
}

func TestLiftRejectsUnknownDiscriminants(t *testing.T) {
	for _, ret := range [][]byte{
		append([]byte{2}, make([]byte, retAreaSize-1)...),
		append([]byte{1, 0, 0, 0, 6}, make([]byte, retAreaSize-5)...),
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%x: no panic", ret[:5])
				}
			}()
			liftResult(ret, (&fakeMemory{}).view)
		}()
	}
}

func TestErrorText(t *testing.T) {
	if got := (&CallError{Kind: Denied, Detail: "no route"}).Error(); got != "plimsoll broker: denied: no route" {
		t.Errorf("got %q", got)
	}
	if got := (&CallError{Kind: BudgetExhausted}).Error(); got != "plimsoll broker: budget-exhausted" {
		t.Errorf("got %q", got)
	}
	if got := ErrorKind(9).String(); got != "ErrorKind(9)" {
		t.Errorf("got %q", got)
	}
}

func TestInvalidUTF8IsRefused(t *testing.T) {
	for _, req := range []Request{
		{Method: "GET", Path: "/v1/\xff"},
		{Method: "GET", Path: "/", Headers: []Header{{"x-a", "\xc3\x28"}}},
	} {
		_, err := Call("orders", req)
		var ce *CallError
		if !errors.As(err, &ce) || ce.Kind != Denied {
			t.Errorf("%+v: got %v", req, err)
		}
	}
}

func TestNoBrokerOffTarget(t *testing.T) {
	if _, err := Get("orders", "/v1/orders/1"); !errors.Is(err, ErrNoBroker) {
		t.Errorf("got %v, want ErrNoBroker", err)
	}
}
