// attack: allocate without end in JavaScript
// why: QuickJS's heap limit and the envelope's memory cap both stop it
// expect: memory_exhausted, error
// limits: memory_bytes=67108864
let a = []; for (;;) a.push(new Array(1e6).fill(1));
