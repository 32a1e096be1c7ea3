// The plimsoll guest SDK for Go: standard library only (no dependencies, no
// module proxy needed). Build guests with GOOS=wasip1 GOARCH=wasm
// -buildmode=c-shared; see README.md.
module plimsoll.dev/guest

go 1.24
