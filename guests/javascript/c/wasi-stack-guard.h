/*
 * Force-included (`clang -include`, see build.sh) at the top of each of
 * QuickJS's C files as rquickjs-sys compiles them.
 *
 * Why: QuickJS-ng turns its C-stack guard off when `__wasi__` is defined
 * (`update_stack_limit` sets no limit, so `JS_SetMaxStackSize` does
 * nothing). Unguarded, deep JS recursion exhausts the wasm stack and traps
 * the whole instance instead of throwing a catchable `RangeError`. Upstream
 * has since made the guard work on WASI (quickjs-ng PR #1700); the QuickJS
 * in rquickjs-sys 0.14.0 predates it.
 *
 * How: include every libc header QuickJS uses while `__wasi__` is still
 * defined (wasi-libc's headers need it; their include guards make QuickJS's
 * own `#include`s no-ops afterwards), then undefine it. In the QuickJS
 * sources `__wasi__` selects only three things: the stack guard (wanted on),
 * `<malloc.h>` (already included here) and `malloc_usable_size` in
 * `js__malloc_usable_size`, which is unused because the runtime is created
 * with rquickjs's Rust allocator (the `rust-alloc` feature) and takes its
 * usable sizes from there. The `EMSCRIPTEN` define that rquickjs-sys adds
 * for WASI still selects the no-threads, no-atomics paths.
 *
 * Drop this file when rquickjs-sys ships a QuickJS with PR #1700.
 */
#ifndef PLIMSOLL_WASI_STACK_GUARD_H
#define PLIMSOLL_WASI_STACK_GUARD_H

#ifndef __wasi__
#error "wasi-stack-guard.h is only for wasm32-wasi targets"
#endif

#include <alloca.h>
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#undef __wasi__

#endif
