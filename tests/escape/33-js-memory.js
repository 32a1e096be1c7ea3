// attack: allocate without end in JavaScript
// why: QuickJS's heap limit and the envelope's memory cap both stop it
// expect: memory_exhausted, error
// limits: memory_bytes=16777216
// (16 MiB and buffers zero-filled natively: under the microVM tier's
// software emulation every page the guest touches is slow, and 64 MiB of
// element-by-element arrays took longer than the run's 10 s.)
let a = []; for (;;) a.push(new ArrayBuffer(1 << 22), new Array(1 << 10).fill(a.length));
