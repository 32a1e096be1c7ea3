package plimsoll

import "testing"

// fakeGrow hands out address ranges (no real memory) and records them.
type fakeGrow struct {
	next  uintptr
	sizes []uintptr
	fail  bool
}

func (g *fakeGrow) grow(n uintptr) uintptr {
	if g.fail {
		return 0
	}
	p := g.next
	g.next += n
	g.sizes = append(g.sizes, n)
	return p
}

func TestArenaAlignsAndReuses(t *testing.T) {
	g := &fakeGrow{next: 0x10001} // a deliberately misaligned first chunk
	var a arena
	p1 := a.alloc(3, 1, g.grow)
	p2 := a.alloc(16, 8, g.grow)
	if p2%8 != 0 || p2 < p1+3 {
		t.Errorf("p1 %#x p2 %#x", p1, p2)
	}
	if len(g.sizes) != 1 || g.sizes[0] != chunkMin {
		t.Errorf("grew %v, want one chunk of %d", g.sizes, chunkMin)
	}
	a.reset()
	if p := a.alloc(3, 1, g.grow); p != p1 {
		t.Errorf("after reset got %#x, want %#x", p, p1)
	}
}

func TestArenaGrowsForLargeAllocations(t *testing.T) {
	g := &fakeGrow{next: 0x10000}
	var a arena
	a.alloc(10, 4, g.grow)
	big := a.alloc(4<<20+1, 1, g.grow)
	if len(g.sizes) != 2 || g.sizes[1] < 4<<20+1 {
		t.Fatalf("grew %v", g.sizes)
	}
	if big < 0x10000+chunkMin {
		t.Errorf("big allocation %#x is inside the first chunk", big)
	}
	// Small allocations still fit in the first chunk; after a reset the
	// big chunk is reused rather than grown again.
	a.alloc(100, 4, g.grow)
	a.reset()
	a.alloc(10, 4, g.grow)
	a.alloc(4<<20+1, 1, g.grow)
	if len(g.sizes) != 2 {
		t.Errorf("grew again after reset: %v", g.sizes)
	}
	// A new chunk is at least twice the last one.
	a.alloc(5<<20, 1, g.grow)
	if n := g.sizes[len(g.sizes)-1]; n < 2*g.sizes[1] {
		t.Errorf("third chunk %d is not at least twice %d", n, g.sizes[1])
	}
}

func TestArenaPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"bad alignment": func() { var a arena; a.alloc(1, 3, (&fakeGrow{next: 8}).grow) },
		"out of memory": func() { var a arena; a.alloc(1, 1, (&fakeGrow{fail: true}).grow) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

func TestArenaRoundsChunksToPages(t *testing.T) {
	// The adapter's first two allocations, 64 KiB at alignment 8 each,
	// share one two-page chunk.
	g := &fakeGrow{next: 0x20000}
	var a arena
	p1 := a.alloc(chunkMin, 8, g.grow)
	p2 := a.alloc(chunkMin, 8, g.grow)
	if len(g.sizes) != 1 || g.sizes[0] != 2*chunkMin || p2 != p1+chunkMin {
		t.Errorf("grew %v, p1 %#x p2 %#x", g.sizes, p1, p2)
	}
}
