// Package plimsoll lets Go code run as a plimsoll agent and call the broker.
//
// An agent is an ordinary Go program. Standard output and error, os.Stdin,
// files under /work, clocks, crypto/rand and os.Exit work as usual. The one
// way to the network is the broker: name one of the run's grants and the
// host makes the HTTP call, adding the credential itself, so the credential
// never enters guest memory.
//
//	package main
//
//	import (
//		"errors"
//		"fmt"
//		"os"
//
//		"plimsoll.dev/guest/plimsoll"
//	)
//
//	func init() { plimsoll.Main(main) }
//
//	func main() {
//		resp, err := plimsoll.Get("orders", "/v1/orders/42")
//		var refused *plimsoll.CallError
//		if errors.As(err, &refused) {
//			fmt.Fprintln(os.Stderr, "refused:", refused.Kind, refused.Detail)
//			os.Exit(1)
//		}
//		fmt.Println(resp.Status, resp.Text())
//	}
//
// Build it as a WASI reactor and turn it into a component of plimsoll's
// agent world (README.md has the details):
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared \
//	    -ldflags=-checklinkname=0 -o core.wasm .
//	plimsoll componentize core.wasm -o agent.wasm --world agent
//
// The broker exists only inside a plimsoll run (GOOS=wasip1). Built for any
// other target the package still compiles, so code and tests can run
// natively, and every call fails with ErrNoBroker.
package plimsoll
