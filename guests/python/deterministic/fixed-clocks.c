/*
 * fixed-clocks.c: an LD_PRELOAD library that gives componentize-py's
 * build-time run of CPython fixed clocks and fixed entropy, so that the heap
 * it snapshots, and so the component's bytes and identity, are the same on
 * every build. Its partner, fixed-stat.c, fixes what the file system reports.
 *
 * Why a preload library: componentize-py 0.25.1 pre-initializes CPython in
 * its own embedded wasmtime with a WASI context it builds itself, from the
 * host's real clocks and entropy, and offers no option to fix them. What
 * CPython reads at that time ends up in the snapshot: entropy becomes the
 * string-hash secret (the layout of every dict and set) and the clocks
 * change what is allocated, and in what order. wasmtime reads both through
 * libc (`clock_gettime`, `getrandom` or `syscall(SYS_getrandom)`), so they
 * are replaced here.
 *
 * It is loaded only into the componentize-py process, never into plimsoll.
 * Deterministic, not random: nothing built this way may rely on the entropy
 * it sees being secret. app.py reseeds CPython's per-run randomness on each
 * run's first evaluation, from that run's own WASI entropy.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* 2000-01-01T00:00:00Z: the wall clock starts here (as do fixed-stat.c's
 * file times). */
#define FIXED_EPOCH 946684800L

/* ---- clocks: start at FIXED_EPOCH and advance 1 us per reading ---------
 * A clock that never advanced would hang any loop waiting for a deadline;
 * one that advances per reading is deterministic as long as the readings
 * are. Per thread: wasmtime's compiler threads read clocks too, as many
 * times as their scheduling happens to need, and must not move the clock
 * of the thread that runs CPython. */
static __thread uint64_t clock_readings;

static void fixed_now(clockid_t clock, struct timespec *ts) {
    uint64_t n = ++clock_readings;
    uint64_t ns = n * 1000;
    time_t base = (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE ||
                   clock == CLOCK_TAI) ? FIXED_EPOCH : 1000;
    ts->tv_sec = base + (time_t)(ns / 1000000000u);
    ts->tv_nsec = (long)(ns % 1000000000u);
}

int clock_gettime(clockid_t clock, struct timespec *ts) {
    fixed_now(clock, ts);
    return 0;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    (void)tz;
    struct timespec ts;
    fixed_now(CLOCK_REALTIME, &ts);
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
    return 0;
}

time_t time(time_t *out) {
    struct timespec ts;
    fixed_now(CLOCK_REALTIME, &ts);
    if (out != NULL) *out = ts.tv_sec;
    return ts.tv_sec;
}

/* ---- entropy: a fixed splitmix64 stream, per thread (as the clocks) --- */
static __thread uint64_t entropy_state = 0x706c696d736f6c6cULL; /* "plimsoll" */

static void fixed_entropy(void *buf, size_t len) {
    unsigned char *out = buf;
    while (len > 0) {
        uint64_t z = (entropy_state += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        size_t n = len < sizeof z ? len : sizeof z;
        memcpy(out, &z, n);
        out += n;
        len -= n;
    }
}

ssize_t getrandom(void *buf, size_t len, unsigned int flags) {
    (void)flags;
    fixed_entropy(buf, len);
    return (ssize_t)len;
}

int getentropy(void *buf, size_t len) {
    if (len > 256) {
        errno = EIO;
        return -1;
    }
    fixed_entropy(buf, len);
    return 0;
}

/* Rust's `getrandom` crate calls `syscall` directly. */
long syscall(long number, ...) {
    static __typeof__(syscall) *real_syscall;
    if (!real_syscall) real_syscall = (__typeof__(syscall) *)dlsym(RTLD_NEXT, "syscall");
    va_list ap;
    va_start(ap, number);
    long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long);
    long d = va_arg(ap, long), e = va_arg(ap, long), f = va_arg(ap, long);
    va_end(ap);
    switch (number) {
    case SYS_getrandom:
        fixed_entropy((void *)a, (size_t)b);
        return b;
    case SYS_clock_gettime:
        return clock_gettime((clockid_t)a, (struct timespec *)b);
    default:
        return real_syscall(number, a, b, c, d, e, f);
    }
}
