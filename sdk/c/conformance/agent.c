/*
 * The C SDK's conformance agent: speaks the protocol of
 * conformance/README.md, performing every command through the SDK's public
 * API (plimsoll.h) and the C library, as a user's program would.
 *
 * World `agent`: `fetch` (world `agent-http` only) is answered with
 * `unsupported fetch`. Diagnostics go to stderr; stdout carries exactly the
 * protocol's lines.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "plimsoll.h"

extern char **environ;

/* The run's arguments, from plimsoll_main. */
static int g_argc;

/* A byte buffer owned by the agent. */
typedef struct bytes {
    uint8_t *ptr;
    size_t len;
} bytes;

static void bytes_free(bytes *b) {
    free(b->ptr);
    b->ptr = NULL;
    b->len = 0;
}

/* Allocates or dies: the agent has no use for running on without memory. */
static void *xmalloc(size_t n) {
    void *p = malloc(n == 0 ? 1 : n);
    if (p == NULL) {
        fprintf(stderr, "conformance agent: out of memory\n");
        plimsoll_exit(1);
    }
    return p;
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decodes a hex field (`-` is empty) into *out, NUL-terminated. */
static bool unhex(const char *field, bytes *out) {
    size_t n = strlen(field);
    out->ptr = NULL;
    out->len = 0;
    if (strcmp(field, "-") == 0) n = 0;
    if (n % 2 != 0) return false;
    out->ptr = xmalloc(n / 2 + 1);
    for (size_t i = 0; i < n; i += 2) {
        int hi = hex_digit(field[i]), lo = hex_digit(field[i + 1]);
        if (hi < 0 || lo < 0) {
            bytes_free(out);
            return false;
        }
        out->ptr[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    out->len = n / 2;
    out->ptr[out->len] = 0;
    return true;
}

/* Decodes a hex field that must become a C string (no NUL inside). */
static bool unhex_str(const char *field, bytes *out) {
    if (!unhex(field, out)) return false;
    if (memchr(out->ptr, 0, out->len) != NULL) {
        bytes_free(out);
        return false;
    }
    return true;
}

/* Writes bytes as lowercase hex, or `-` when empty. */
static void put_hex(FILE *f, const uint8_t *p, size_t n) {
    static const char digits[] = "0123456789abcdef";
    if (n == 0) {
        fputc('-', f);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        fputc(digits[p[i] >> 4], f);
        fputc(digits[p[i] & 15], f);
    }
}

/* Reads all of stdin. */
static bytes read_stdin(void) {
    bytes b = {xmalloc(4096), 0};
    size_t cap = 4096;
    for (;;) {
        if (b.len == cap) {
            cap *= 2;
            uint8_t *grown = realloc(b.ptr, cap);
            if (grown == NULL) {
                fprintf(stderr, "conformance agent: out of memory\n");
                plimsoll_exit(1);
            }
            b.ptr = grown;
        }
        size_t got = fread(b.ptr + b.len, 1, cap - b.len, stdin);
        b.len += got;
        if (got == 0) break;
    }
    return b;
}

/* Splits `line` in place at single spaces; returns the field count. */
static size_t split(char *line, char **fields, size_t max) {
    size_t n = 0;
    char *p = line;
    while (n < max) {
        fields[n++] = p;
        char *sp = strchr(p, ' ');
        if (sp == NULL) break;
        *sp = 0;
        p = sp + 1;
    }
    return n;
}

/* Parses `-`, `hex:DATA` or `fill:N:BYTEHEX` into *out. */
static bool parse_body(const char *field, bytes *out) {
    if (strcmp(field, "-") == 0) return unhex("-", out);
    if (strncmp(field, "hex:", 4) == 0) return unhex(field + 4, out);
    if (strncmp(field, "fill:", 5) == 0) {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(field + 5, &end, 10);
        if (errno != 0 || end == field + 5 || *end != ':' || n > SIZE_MAX - 1) return false;
        bytes byte;
        if (!unhex(end + 1, &byte)) return false;
        bool one = byte.len == 1;
        uint8_t value = one ? byte.ptr[0] : 0;
        bytes_free(&byte);
        if (!one) return false;
        out->ptr = xmalloc((size_t)n);
        memset(out->ptr, value, (size_t)n);
        out->len = (size_t)n;
        return true;
    }
    return false;
}

/* A request decoded from the protocol's METHOD PATH HEADERS BODY fields. */
typedef struct decoded_request {
    plimsoll_request req;
    bytes path;
    bytes body;
    plimsoll_header *headers;
    bytes *header_bytes; /* 2 per header: name, value */
    size_t header_count;
} decoded_request;

static void decoded_request_free(decoded_request *d) {
    for (size_t i = 0; i < 2 * d->header_count; i++) bytes_free(&d->header_bytes[i]);
    free(d->header_bytes);
    free(d->headers);
    bytes_free(&d->path);
    bytes_free(&d->body);
}

/* Decodes `NAMEHEX:VALUEHEX,...` (or `-`) into d's headers. */
static bool parse_headers(char *field, decoded_request *d) {
    if (strcmp(field, "-") == 0) return true;
    size_t count = 1;
    for (const char *p = field; *p; p++) count += *p == ',';
    d->headers = xmalloc(count * sizeof *d->headers);
    d->header_bytes = xmalloc(2 * count * sizeof *d->header_bytes);
    char *p = field;
    for (size_t i = 0; i < count; i++) {
        char *comma = strchr(p, ',');
        if (comma != NULL) *comma = 0;
        char *colon = strchr(p, ':');
        if (colon == NULL) return false;
        *colon = 0;
        bytes *name = &d->header_bytes[2 * i], *value = &d->header_bytes[2 * i + 1];
        if (!unhex_str(p, name)) return false;
        d->header_count++;
        if (!unhex_str(colon + 1, value)) {
            bytes_free(name);
            d->header_count--;
            return false;
        }
        d->headers[i].name = (const char *)name->ptr;
        d->headers[i].value = (const char *)value->ptr;
        p = comma == NULL ? p + strlen(p) : comma + 1;
    }
    return true;
}

/* Decodes fields[0..4) = METHOD PATH HEADERS BODY. */
static bool decode_request(char **fields, decoded_request *d) {
    memset(d, 0, sizeof *d);
    if (!unhex_str(fields[1], &d->path) || !parse_headers(fields[2], d) ||
        !parse_body(fields[3], &d->body)) {
        decoded_request_free(d);
        return false;
    }
    d->req.method = fields[0];
    d->req.path = (const char *)d->path.ptr;
    d->req.headers = d->headers;
    d->req.header_count = d->header_count;
    d->req.body = d->body.ptr;
    d->req.body_len = d->body.len;
    return true;
}

/* Prints a call's result as the protocol's `ok`/`header`/`err` lines. */
static void print_result(plimsoll_error_kind kind, const plimsoll_response *resp,
                         const plimsoll_error *err) {
    if (kind == PLIMSOLL_OK) {
        printf("ok %u ", (unsigned)resp->status);
        put_hex(stdout, resp->body, resp->body_len);
        fputc('\n', stdout);
        for (size_t i = 0; i < resp->header_count; i++) {
            const plimsoll_header *h = &resp->headers[i];
            if (strncmp(h->name, "x-conformance", 13) != 0) continue;
            printf("header %s ", h->name);
            put_hex(stdout, (const uint8_t *)h->value, strlen(h->value));
            fputc('\n', stdout);
        }
        return;
    }
    printf("err %s", plimsoll_error_tag(kind));
    if (kind == PLIMSOLL_ERR_DENIED || kind == PLIMSOLL_ERR_UPSTREAM ||
        kind == PLIMSOLL_ERR_INVALID_ARGUMENT) {
        const char *detail = err->detail != NULL ? err->detail : "";
        fputc(' ', stdout);
        put_hex(stdout, (const uint8_t *)detail, strlen(detail));
    }
    fputc('\n', stdout);
}

/* call API METHOD PATH HEADERS BODY */
static bool cmd_call(char **f) {
    bytes api;
    decoded_request d;
    if (!unhex_str(f[0], &api)) return false;
    if (!decode_request(f + 1, &d)) {
        bytes_free(&api);
        return false;
    }
    plimsoll_response resp;
    plimsoll_error err;
    plimsoll_error_kind kind = plimsoll_call((const char *)api.ptr, &d.req, &resp, &err);
    print_result(kind, &resp, &err);
    plimsoll_response_free(&resp);
    plimsoll_error_free(&err);
    decoded_request_free(&d);
    bytes_free(&api);
    return true;
}

/* origin ORIGIN TIMEOUT METHOD PATH HEADERS BODY */
static bool cmd_origin(char **f) {
    int64_t timeout = PLIMSOLL_NO_TIMEOUT;
    if (strcmp(f[1], "-") != 0) {
        char *end;
        errno = 0;
        unsigned long long t = strtoull(f[1], &end, 10);
        if (errno != 0 || end == f[1] || *end != 0 || t > UINT32_MAX) return false;
        timeout = (int64_t)t;
    }
    bytes origin;
    decoded_request d;
    if (!unhex_str(f[0], &origin)) return false;
    if (!decode_request(f + 2, &d)) {
        bytes_free(&origin);
        return false;
    }
    plimsoll_response resp;
    plimsoll_error err;
    plimsoll_error_kind kind =
        plimsoll_call_origin((const char *)origin.ptr, &d.req, timeout, &resp, &err);
    print_result(kind, &resp, &err);
    plimsoll_response_free(&resp);
    plimsoll_error_free(&err);
    decoded_request_free(&d);
    bytes_free(&origin);
    return true;
}

/* print HEX / eprint HEX */
static bool cmd_print(FILE *f, const char *field) {
    bytes b;
    if (!unhex(field, &b)) return false;
    fwrite(b.ptr, 1, b.len, f);
    fputc('\n', f);
    bytes_free(&b);
    return true;
}

static void cmd_clock(void) {
    struct timespec wall, m1, m2;
    bool ok = clock_gettime(CLOCK_REALTIME, &wall) == 0 &&
              clock_gettime(CLOCK_MONOTONIC, &m1) == 0 &&
              clock_gettime(CLOCK_MONOTONIC, &m2) == 0 && wall.tv_sec > 1600000000 &&
              (m2.tv_sec > m1.tv_sec || (m2.tv_sec == m1.tv_sec && m2.tv_nsec >= m1.tv_nsec));
    printf("clock %s\n", ok ? "ok" : "bad");
}

static bool all_zero(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != 0) return false;
    return true;
}

static void cmd_random(void) {
    uint8_t a[16], b[16];
    bool ok = getentropy(a, sizeof a) == 0 && getentropy(b, sizeof b) == 0 &&
              memcmp(a, b, sizeof a) != 0 && !all_zero(a, sizeof a) && !all_zero(b, sizeof b);
    printf("random %s\n", ok ? "ok" : "bad");
}

/* write PATH DATA */
static bool cmd_write(char **f) {
    bytes path, data;
    if (!unhex_str(f[0], &path)) return false;
    if (!unhex(f[1], &data)) {
        bytes_free(&path);
        return false;
    }
    FILE *file = fopen((const char *)path.ptr, "wb");
    bool ok = file != NULL;
    if (ok) ok = fwrite(data.ptr, 1, data.len, file) == data.len;
    if (file != NULL && fclose(file) != 0) ok = false;
    if (ok) {
        printf("wrote %zu\n", data.len);
    } else {
        printf("err io\n");
    }
    bytes_free(&path);
    bytes_free(&data);
    return true;
}

/* read PATH */
static bool cmd_read(const char *field) {
    bytes path;
    if (!unhex_str(field, &path)) return false;
    FILE *file = fopen((const char *)path.ptr, "rb");
    bytes_free(&path);
    if (file == NULL) {
        printf("err io\n");
        return true;
    }
    bytes data = {NULL, 0};
    size_t cap = 0;
    bool ok = true;
    for (;;) {
        if (data.len == cap) {
            cap = cap == 0 ? 4096 : cap * 2;
            uint8_t *grown = realloc(data.ptr, cap);
            if (grown == NULL) {
                ok = false;
                break;
            }
            data.ptr = grown;
        }
        size_t got = fread(data.ptr + data.len, 1, cap - data.len, file);
        data.len += got;
        if (got == 0) break;
    }
    if (ferror(file)) ok = false;
    fclose(file);
    if (ok) {
        fputs("read ", stdout);
        put_hex(stdout, data.ptr, data.len);
        fputc('\n', stdout);
    } else {
        printf("err io\n");
    }
    bytes_free(&data);
    return true;
}

/* exit CODE */
static bool cmd_exit(const char *field) {
    if (strcmp(field, "0") == 0) plimsoll_exit(0);
    if (strcmp(field, "1") == 0) plimsoll_exit(1);
    return false;
}

/* Runs one command line; false means it was malformed. */
static bool run_command(char *line, size_t stdin_len) {
    char *f[8];
    size_t n = split(line, f, 8);
    const char *word = f[0];
    if (strcmp(word, "print") == 0 && n == 2) return cmd_print(stdout, f[1]);
    if (strcmp(word, "eprint") == 0 && n == 2) return cmd_print(stderr, f[1]);
    if (strcmp(word, "stdin") == 0 && n == 1) {
        printf("stdin %zu\n", stdin_len);
        return true;
    }
    if (strcmp(word, "env") == 0 && n == 1) {
        size_t count = 0;
        for (char **e = environ; e != NULL && *e != NULL; e++) count++;
        printf("env %zu\n", count);
        return true;
    }
    if (strcmp(word, "args") == 0 && n == 1) {
        printf("args %d\n", g_argc > 1 ? g_argc - 1 : 0);
        return true;
    }
    if (strcmp(word, "clock") == 0 && n == 1) {
        cmd_clock();
        return true;
    }
    if (strcmp(word, "random") == 0 && n == 1) {
        cmd_random();
        return true;
    }
    if (strcmp(word, "write") == 0 && n == 3) return cmd_write(f + 1);
    if (strcmp(word, "read") == 0 && n == 2) return cmd_read(f[1]);
    if (strcmp(word, "call") == 0 && n == 6) return cmd_call(f + 1);
    if (strcmp(word, "origin") == 0 && n == 7) return cmd_origin(f + 1);
    if (strcmp(word, "exit") == 0 && n == 2) return cmd_exit(f[1]);
    if (strcmp(word, "print") == 0 || strcmp(word, "eprint") == 0 || strcmp(word, "stdin") == 0 ||
        strcmp(word, "env") == 0 || strcmp(word, "args") == 0 || strcmp(word, "clock") == 0 ||
        strcmp(word, "random") == 0 || strcmp(word, "write") == 0 || strcmp(word, "read") == 0 ||
        strcmp(word, "call") == 0 || strcmp(word, "origin") == 0 || strcmp(word, "exit") == 0) {
        return false; /* a known command with the wrong number of fields */
    }
    printf("unsupported %s\n", word);
    return true;
}

int plimsoll_main(int argc, char **argv) {
    (void)argv;
    g_argc = argc;
    bytes input = read_stdin();
    size_t stdin_len = input.len;
    size_t start = 0;
    while (start < input.len) {
        uint8_t *nl = memchr(input.ptr + start, '\n', input.len - start);
        size_t end = nl != NULL ? (size_t)(nl - input.ptr) : input.len;
        size_t len = end - start;
        char *line = xmalloc(len + 1);
        memcpy(line, input.ptr + start, len);
        line[len] = 0;
        start = end + 1;
        if (len == 0) {
            free(line);
            continue;
        }
        if (!run_command(line, stdin_len)) {
            fprintf(stderr, "conformance agent: malformed command: %s\n", line);
        }
        free(line);
    }
    bytes_free(&input);
    return 0;
}
