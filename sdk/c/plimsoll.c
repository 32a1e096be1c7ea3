/*
 * plimsoll.c: the C guest SDK over the wit-bindgen bindings in gen/.
 *
 * Three parts: the checks and conversions around broker.call/call-origin,
 * plimsoll_exit, and the wasi:cli/run export that calls the user's
 * plimsoll_main.
 */
#include "plimsoll.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"

/* ---- input checks: refuse here what the host would trap on ---- */

/*
 * Whether s[0..n) is valid UTF-8 (the canonical ABI traps on a string that
 * is not): no overlong forms, no surrogates, nothing above U+10FFFF.
 */
static bool utf8_valid(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        size_t extra;
        uint32_t min, cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            extra = 1, min = 0x80, cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            extra = 2, min = 0x800, cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            extra = 3, min = 0x10000, cp = c & 0x07;
        } else {
            return false;
        }
        if (n - i <= extra) return false;
        for (size_t k = 1; k <= extra; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return false;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += extra + 1;
    }
    return true;
}

/* Sets *err to an SDK-side refusal; returns its kind. */
static plimsoll_error_kind refuse(plimsoll_error *err, const char *why) {
    if (err != NULL) {
        err->kind = PLIMSOLL_ERR_INVALID_ARGUMENT;
        err->detail = strdup(why);
    }
    return PLIMSOLL_ERR_INVALID_ARGUMENT;
}

/* Borrows a C string as a WIT string; false when NULL or not UTF-8. */
static bool borrow_string(const char *s, agent_string_t *out) {
    if (s == NULL) return false;
    size_t n = strlen(s);
    if (!utf8_valid((const uint8_t *)s, n)) return false;
    out->ptr = (uint8_t *)s; /* the import only reads it */
    out->len = n;
    return true;
}

/*
 * Borrows *req as the binding's request. The header array is the one
 * allocation; the caller frees wit->headers.ptr. Returns NULL, or why not.
 */
static const char *borrow_request(const plimsoll_request *req,
                                  plimsoll_sandbox_broker_request_t *wit) {
    memset(wit, 0, sizeof *wit);
    if (req == NULL) return "request is NULL";
    if (!borrow_string(req->method, &wit->method)) return "method is NULL or not UTF-8";
    if (!borrow_string(req->path, &wit->path)) return "path is NULL or not UTF-8";
    if (req->body == NULL && req->body_len != 0) return "body is NULL but body_len is not 0";
    if (req->headers == NULL && req->header_count != 0) {
        return "headers is NULL but header_count is not 0";
    }
    if (req->header_count > 0) {
        if (req->header_count > SIZE_MAX / sizeof *wit->headers.ptr) return "too many headers";
        wit->headers.ptr = malloc(req->header_count * sizeof *wit->headers.ptr);
        if (wit->headers.ptr == NULL) return "out of memory";
        for (size_t i = 0; i < req->header_count; i++) {
            if (!borrow_string(req->headers[i].name, &wit->headers.ptr[i].f0) ||
                !borrow_string(req->headers[i].value, &wit->headers.ptr[i].f1)) {
                free(wit->headers.ptr);
                wit->headers.ptr = NULL;
                return "a header name or value is NULL or not UTF-8";
            }
        }
        wit->headers.len = req->header_count;
    }
    wit->body.ptr = (uint8_t *)req->body; /* the import only reads it */
    wit->body.len = req->body_len;
    return NULL;
}

/* ---- results: from the binding's types to the SDK's ---- */

/* A NUL-terminated copy of a WIT string, or NULL without memory. */
static char *copy_string(const agent_string_t *s) {
    char *c = malloc(s->len + 1);
    if (c == NULL) return NULL;
    if (s->len > 0) memcpy(c, s->ptr, s->len);
    c[s->len] = 0;
    return c;
}

/* Moves the binding's response into *out (which owns it afterwards). */
static plimsoll_error_kind take_response(plimsoll_sandbox_broker_response_t *wit,
                                         plimsoll_response *out, plimsoll_error *err) {
    size_t n = wit->headers.len;
    out->status = wit->status;
    /* The body: reused when it was allocated, with a NUL byte appended. */
    uint8_t *body = wit->body.len > 0 ? wit->body.ptr : NULL;
    uint8_t *grown = realloc(body, wit->body.len + 1);
    if (grown == NULL) goto oom;
    grown[wit->body.len] = 0;
    out->body = grown;
    out->body_len = wit->body.len;
    wit->body.ptr = NULL;
    wit->body.len = 0;
    if (n > 0) {
        out->headers = calloc(n, sizeof *out->headers);
        if (out->headers == NULL) goto oom;
        out->header_count = n;
        for (size_t i = 0; i < n; i++) {
            out->headers[i].name = copy_string(&wit->headers.ptr[i].f0);
            out->headers[i].value = copy_string(&wit->headers.ptr[i].f1);
            if (out->headers[i].name == NULL || out->headers[i].value == NULL) goto oom;
        }
    }
    plimsoll_sandbox_broker_response_free(wit);
    return PLIMSOLL_OK;
oom:
    plimsoll_sandbox_broker_response_free(wit);
    plimsoll_response_free(out);
    return refuse(err, "out of memory for the response");
}

/* Converts the binding's error into *err; returns its kind. */
static plimsoll_error_kind take_error(plimsoll_sandbox_broker_call_error_t *wit,
                                      plimsoll_error *err) {
    plimsoll_error_kind kind;
    const agent_string_t *detail = NULL;
    switch (wit->tag) {
    case PLIMSOLL_SANDBOX_BROKER_CALL_ERROR_DENIED:
        kind = PLIMSOLL_ERR_DENIED;
        detail = &wit->val.denied;
        break;
    case PLIMSOLL_SANDBOX_BROKER_CALL_ERROR_BUDGET_EXHAUSTED:
        kind = PLIMSOLL_ERR_BUDGET_EXHAUSTED;
        break;
    case PLIMSOLL_SANDBOX_BROKER_CALL_ERROR_REQUEST_TOO_LARGE:
        kind = PLIMSOLL_ERR_REQUEST_TOO_LARGE;
        break;
    case PLIMSOLL_SANDBOX_BROKER_CALL_ERROR_RESPONSE_TOO_LARGE:
        kind = PLIMSOLL_ERR_RESPONSE_TOO_LARGE;
        break;
    case PLIMSOLL_SANDBOX_BROKER_CALL_ERROR_TIMEOUT:
        kind = PLIMSOLL_ERR_TIMEOUT;
        break;
    case PLIMSOLL_SANDBOX_BROKER_CALL_ERROR_UPSTREAM:
        kind = PLIMSOLL_ERR_UPSTREAM;
        detail = &wit->val.upstream;
        break;
    default: /* not in the WIT: the canonical ABI rejects it before here */
        kind = PLIMSOLL_ERR_UPSTREAM;
        break;
    }
    if (err != NULL) {
        err->kind = kind;
        err->detail = detail != NULL ? copy_string(detail) : NULL;
    }
    plimsoll_sandbox_broker_call_error_free(wit);
    return kind;
}

/* Clears the outputs a call fills, so that both are safe to free. */
static void clear_outputs(plimsoll_response *out, plimsoll_error *err) {
    if (out != NULL) memset(out, 0, sizeof *out);
    if (err != NULL) {
        err->kind = PLIMSOLL_OK;
        err->detail = NULL;
    }
}

/* ---- the public calls ---- */

plimsoll_error_kind plimsoll_call(const char *api, const plimsoll_request *req,
                                  plimsoll_response *out, plimsoll_error *err) {
    clear_outputs(out, err);
    if (out == NULL) return refuse(err, "out is NULL");
    agent_string_t wit_api;
    if (!borrow_string(api, &wit_api)) return refuse(err, "api is NULL or not UTF-8");
    plimsoll_sandbox_broker_request_t wit_req;
    const char *why = borrow_request(req, &wit_req);
    if (why != NULL) return refuse(err, why);

    plimsoll_sandbox_broker_response_t resp;
    plimsoll_sandbox_broker_call_error_t call_err;
    bool ok = plimsoll_sandbox_broker_call(&wit_api, &wit_req, &resp, &call_err);
    free(wit_req.headers.ptr);
    return ok ? take_response(&resp, out, err) : take_error(&call_err, err);
}

plimsoll_error_kind plimsoll_call_origin(const char *origin, const plimsoll_request *req,
                                         int64_t timeout_ms, plimsoll_response *out,
                                         plimsoll_error *err) {
    clear_outputs(out, err);
    if (out == NULL) return refuse(err, "out is NULL");
    agent_string_t wit_origin;
    if (!borrow_string(origin, &wit_origin)) return refuse(err, "origin is NULL or not UTF-8");
    uint32_t timeout = 0;
    if (timeout_ms != PLIMSOLL_NO_TIMEOUT) {
        if (timeout_ms < 0 || timeout_ms > (int64_t)UINT32_MAX) {
            return refuse(err, "timeout_ms is neither PLIMSOLL_NO_TIMEOUT nor 0..4294967295");
        }
        timeout = (uint32_t)timeout_ms;
    }
    plimsoll_sandbox_broker_request_t wit_req;
    const char *why = borrow_request(req, &wit_req);
    if (why != NULL) return refuse(err, why);

    plimsoll_sandbox_broker_response_t resp;
    plimsoll_sandbox_broker_call_error_t call_err;
    bool ok = plimsoll_sandbox_broker_call_origin(
        &wit_origin, &wit_req, timeout_ms == PLIMSOLL_NO_TIMEOUT ? NULL : &timeout, &resp,
        &call_err);
    free(wit_req.headers.ptr);
    return ok ? take_response(&resp, out, err) : take_error(&call_err, err);
}

plimsoll_error_kind plimsoll_get(const char *api, const char *path, plimsoll_response *out,
                                 plimsoll_error *err) {
    plimsoll_request req = {.method = "GET", .path = path};
    return plimsoll_call(api, &req, out, err);
}

plimsoll_error_kind plimsoll_post(const char *api, const char *path, const uint8_t *body,
                                  size_t body_len, plimsoll_response *out, plimsoll_error *err) {
    plimsoll_request req = {.method = "POST", .path = path, .body = body, .body_len = body_len};
    return plimsoll_call(api, &req, out, err);
}

void plimsoll_response_free(plimsoll_response *resp) {
    if (resp == NULL) return;
    for (size_t i = 0; i < resp->header_count; i++) {
        /* The SDK allocated these strings; const only keeps callers honest. */
        free((void *)resp->headers[i].name);
        free((void *)resp->headers[i].value);
    }
    free(resp->headers);
    free(resp->body);
    memset(resp, 0, sizeof *resp);
}

void plimsoll_error_free(plimsoll_error *err) {
    if (err == NULL) return;
    free(err->detail);
    err->detail = NULL;
    err->kind = PLIMSOLL_OK;
}

const char *plimsoll_error_tag(plimsoll_error_kind kind) {
    switch (kind) {
    case PLIMSOLL_OK:
        return "ok";
    case PLIMSOLL_ERR_DENIED:
        return "denied";
    case PLIMSOLL_ERR_BUDGET_EXHAUSTED:
        return "budget-exhausted";
    case PLIMSOLL_ERR_REQUEST_TOO_LARGE:
        return "request-too-large";
    case PLIMSOLL_ERR_RESPONSE_TOO_LARGE:
        return "response-too-large";
    case PLIMSOLL_ERR_TIMEOUT:
        return "timeout";
    case PLIMSOLL_ERR_UPSTREAM:
        return "upstream";
    case PLIMSOLL_ERR_INVALID_ARGUMENT:
        return "invalid-argument";
    }
    return "unknown";
}

/* ---- the end of a run ---- */

void plimsoll_exit(int code) {
    fflush(stdout);
    fflush(stderr);
    wasi_cli_exit_result_void_void_t status = {.is_err = code != 0};
    wasi_cli_exit_exit(&status);
    abort(); /* not reached: wasi:cli/exit does not return */
}

/*
 * The component's wasi:cli/run export. The module is a reactor: nothing runs
 * `main` and nothing calls exit() afterwards, so this is where stdio is
 * flushed (without it, buffered output is lost).
 */
bool exports_wasi_cli_run_run(void) {
    agent_list_string_t args;
    wasi_cli_environment_get_arguments(&args);
    size_t argc = args.len;
    char **argv = argc < INT_MAX ? calloc(argc + 1, sizeof *argv) : NULL;
    bool ok = argv != NULL;
    for (size_t i = 0; ok && i < argc; i++) {
        argv[i] = copy_string(&args.ptr[i]);
        ok = argv[i] != NULL;
    }
    agent_list_string_free(&args);
    int code = 1;
    if (ok) {
        code = plimsoll_main((int)argc, argv);
    } else {
        fprintf(stderr, "plimsoll: no memory for the program's arguments\n");
    }
    for (size_t i = 0; argv != NULL && i < argc; i++) {
        free(argv[i]);
    }
    free(argv);
    fflush(stdout);
    fflush(stderr);
    return code == 0;
}
