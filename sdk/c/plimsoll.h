/*
 * plimsoll.h: the C guest SDK for plimsoll (world `agent` of
 * plimsoll:sandbox@0.1.3).
 *
 * A program written with this SDK defines `plimsoll_main` instead of `main`,
 * makes HTTP calls through the host's broker with `plimsoll_call` /
 * `plimsoll_call_origin`, and uses the C library as usual for everything else
 * (stdio, files under /work, clocks, random, environ).
 *
 * The SDK owns the component's `wasi:cli/run` export: it calls
 * `plimsoll_main`, flushes stdout and stderr, and turns the return value into
 * the run's exit code. See README.md for why (the program is a reactor
 * module, and nothing else would flush stdio).
 *
 * Memory: every string and body the SDK hands out is heap memory owned by the
 * caller, released with `plimsoll_response_free` / `plimsoll_error_free`.
 */
#ifndef PLIMSOLL_H
#define PLIMSOLL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** One HTTP header: a NUL-terminated UTF-8 name and value. */
typedef struct plimsoll_header {
    /** Header name, e.g. "x-request-id". */
    const char *name;
    /** Header value. */
    const char *value;
} plimsoll_header;

/** An HTTP request for the broker to make under a grant. */
typedef struct plimsoll_request {
    /** "GET", "PUT", "POST", "DELETE" or "PATCH" (case-insensitive). */
    const char *method;
    /** Canonical absolute path with optional query, e.g. "/v1/orders/42". */
    const char *path;
    /** Extra request headers (`header_count` of them); NULL when none. */
    const plimsoll_header *headers;
    /** Number of entries in `headers`. */
    size_t header_count;
    /** Request body (`body_len` bytes, any bytes); NULL when empty. */
    const uint8_t *body;
    /** Length of `body` in bytes; at most 1 MiB. */
    size_t body_len;
} plimsoll_request;

/** The upstream's answer. Release it with `plimsoll_response_free`. */
typedef struct plimsoll_response {
    /** HTTP status code (a 3xx arrives as it is; redirects are not followed). */
    uint16_t status;
    /** Response headers in the order received (names lowercase). */
    plimsoll_header *headers;
    /** Number of entries in `headers`. */
    size_t header_count;
    /**
     * Response body: `body_len` bytes, followed by one NUL byte that is not
     * counted (so a text body can be printed with "%s"; a binary body may
     * itself contain NULs). Never NULL after a successful call.
     */
    uint8_t *body;
    /** Length of `body` in bytes, not counting the trailing NUL. */
    size_t body_len;
} plimsoll_response;

/**
 * Why a call produced no response. The first six kinds are the WIT
 * `call-error` cases, decided by the host; the host records each in the run's
 * CallTrace and the run goes on.
 */
typedef enum plimsoll_error_kind {
    /** No error: the call produced a response. */
    PLIMSOLL_OK = 0,
    /** The grant does not allow this call; `detail` says why. */
    PLIMSOLL_ERR_DENIED = 1,
    /** The run has used its whole call budget. */
    PLIMSOLL_ERR_BUDGET_EXHAUSTED = 2,
    /** The request body is larger than the request cap (1 MiB). */
    PLIMSOLL_ERR_REQUEST_TOO_LARGE = 3,
    /** The upstream answered with more than the grant's response cap. */
    PLIMSOLL_ERR_RESPONSE_TOO_LARGE = 4,
    /** The upstream did not answer within the per-call timeout. */
    PLIMSOLL_ERR_TIMEOUT = 5,
    /** The upstream could not be reached or answered garbage; see `detail`. */
    PLIMSOLL_ERR_UPSTREAM = 6,
    /**
     * Refused by the SDK before anything reached the host: a NULL argument,
     * a string that is not UTF-8, a timeout out of range, or no memory.
     * `detail` says which. Not a WIT case; nothing is traced.
     */
    PLIMSOLL_ERR_INVALID_ARGUMENT = 7
} plimsoll_error_kind;

/** A call's error: its kind and, for some kinds, a message. */
typedef struct plimsoll_error {
    /** What went wrong; PLIMSOLL_OK after a successful call. */
    plimsoll_error_kind kind;
    /**
     * NUL-terminated message for PLIMSOLL_ERR_DENIED, PLIMSOLL_ERR_UPSTREAM
     * and PLIMSOLL_ERR_INVALID_ARGUMENT (it never echoes a path or header
     * value); NULL for the other kinds, and when no memory was left to copy
     * it. Release with `plimsoll_error_free`.
     */
    char *detail;
} plimsoll_error;

/** `plimsoll_call_origin`'s `timeout_ms` for "the grant's own timeout". */
#define PLIMSOLL_NO_TIMEOUT (-1)

/**
 * Makes one HTTP call under the grant named `api`.
 *
 * Returns PLIMSOLL_OK and fills `*out` with the response, or returns the
 * error's kind, leaves `*out` empty (all zero) and, if `err` is not NULL,
 * fills `*err`. `err` may be NULL when only the kind matters. A denied or
 * failed call never traps; the program goes on.
 */
plimsoll_error_kind plimsoll_call(const char *api, const plimsoll_request *req,
                                  plimsoll_response *out, plimsoll_error *err);

/**
 * Makes one HTTP call to `origin` ("scheme://host[:port]") under the run's
 * one grant whose base URL is that origin; `req->path` is the URL's path and
 * query. `timeout_ms` (0 to 4294967295) shortens the per-call timeout (it
 * never lengthens it); PLIMSOLL_NO_TIMEOUT keeps the grant's. Results as for
 * `plimsoll_call`.
 */
plimsoll_error_kind plimsoll_call_origin(const char *origin, const plimsoll_request *req,
                                         int64_t timeout_ms, plimsoll_response *out,
                                         plimsoll_error *err);

/** `plimsoll_call` with method GET, no headers and no body. */
plimsoll_error_kind plimsoll_get(const char *api, const char *path, plimsoll_response *out,
                                 plimsoll_error *err);

/** `plimsoll_call` with method POST, no extra headers and `body`. */
plimsoll_error_kind plimsoll_post(const char *api, const char *path, const uint8_t *body,
                                  size_t body_len, plimsoll_response *out, plimsoll_error *err);

/** Releases a response's memory and leaves it empty. NULL is ignored. */
void plimsoll_response_free(plimsoll_response *resp);

/** Releases an error's detail and leaves it PLIMSOLL_OK. NULL is ignored. */
void plimsoll_error_free(plimsoll_error *err);

/**
 * The kind's WIT `call-error` case name ("denied", "budget-exhausted",
 * "request-too-large", "response-too-large", "timeout", "upstream"), "ok"
 * for PLIMSOLL_OK, "invalid-argument" for the SDK's own refusal. A static
 * string; never NULL.
 */
const char *plimsoll_error_tag(plimsoll_error_kind kind);

/**
 * Flushes stdout and stderr, then ends the run at once with exit code 0
 * (`code` == 0) or 1 (any other value: `wasi:cli/exit` carries no other).
 * `atexit` handlers do not run.
 */
__attribute__((__noreturn__)) void plimsoll_exit(int code);

/**
 * The program's entry point, written by the user in place of `main`.
 *
 * `argv[0..argc)` are the run's arguments as the host gives them (plimsoll
 * gives at most the program name, so `argc` is 0 or 1); `argv[argc]` is
 * NULL. Return 0 for success; any other value ends the run with exit code 1.
 * stdout and stderr are flushed after it returns.
 */
int plimsoll_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif /* PLIMSOLL_H */
