/*
 * hello.c: the C SDK's example agent. It prints a line, makes one call
 * under the `orders` grant, and handles a typed error from a call the grant
 * does not allow.
 *
 *   sdk/c/build.sh
 *   plimsoll run --provider wasm --grants-file sdk/c/examples/grants.json \
 *       --grant orders target/sdk/c/hello.wasm
 */
#include <stdio.h>

#include "plimsoll.h"

/* Prints a call's outcome: the status and body, or the typed error. */
static void report(const char *what, plimsoll_error_kind kind, const plimsoll_response *resp,
                   const plimsoll_error *err) {
    if (kind == PLIMSOLL_OK) {
        printf("%s: %u %s\n", what, (unsigned)resp->status, (const char *)resp->body);
    } else if (err->detail != NULL) {
        printf("%s: refused (%s: %s)\n", what, plimsoll_error_tag(kind), err->detail);
    } else {
        printf("%s: refused (%s)\n", what, plimsoll_error_tag(kind));
    }
}

int plimsoll_main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    printf("hello from C\n");

    plimsoll_response resp;
    plimsoll_error err;
    plimsoll_error_kind kind = plimsoll_get("orders", "/v1/orders/42", &resp, &err);
    report("GET /v1/orders/42", kind, &resp, &err);
    plimsoll_response_free(&resp);
    plimsoll_error_free(&err);

    /* The grant lists no DELETE: the host refuses it, the program goes on. */
    plimsoll_request del = {.method = "DELETE", .path = "/v1/orders/42"};
    kind = plimsoll_call("orders", &del, &resp, &err);
    report("DELETE /v1/orders/42", kind, &resp, &err);
    plimsoll_response_free(&resp);
    plimsoll_error_free(&err);
    return 0;
}
