// Command hello is the Go SDK's example agent: it prints a line, fetches an
// order through the broker under the grant "orders", and handles a refusal
// as the typed error it is.
//
//	sdk/go/build.sh    # writes target/sdk/go/hello.wasm
//	plimsoll run --provider wasm --grants-file grants.json --grant orders \
//	    target/sdk/go/hello.wasm
package main

import (
	"errors"
	"fmt"
	"os"

	"plimsoll.dev/guest/plimsoll"
)

func init() { plimsoll.Main(main) }

func main() {
	fmt.Println("hello from Go")

	resp, err := plimsoll.Get("orders", "/v1/orders/42")
	var refused *plimsoll.CallError
	if errors.As(err, &refused) {
		// A typed refusal: Kind says why (Denied when the grant does not
		// allow the call), Detail the host's message. A refusal does not
		// end the run; this example chooses to stop.
		fmt.Fprintln(os.Stderr, "the broker refused the call:", refused.Kind, refused.Detail)
		os.Exit(1)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(resp.Status, resp.Text())
}
