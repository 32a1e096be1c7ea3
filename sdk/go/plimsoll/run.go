package plimsoll

import (
	"fmt"
	"os"
)

// userMain is the function the run export calls (set by Main).
var userMain func()

// Main registers the program's main function as the agent's entry point.
// Call it from an init function of package main, so that the program stays
// ordinary Go:
//
//	func init() { plimsoll.Main(main) }
//
//	func main() { fmt.Println("hello") }
//
// A guest is a WASI reactor (-buildmode=c-shared), which never calls
// main.main itself; plimsoll calls the component's wasi:cli/run export
// once, and that export calls f. When f returns, the run succeeds (exit
// code 0). To fail, call os.Exit(1): the exit code and the output written
// before it are kept. wasi:cli/exit carries only success or failure, so any
// non-zero code gives exit code 1. An unrecovered panic prints its trace to
// stderr and traps, as a crash should: the run's status is "trap".
//
// Output needs no flushing: os.Stdout and os.Stderr are unbuffered (each
// Write is one fd_write, which the WASI adapter writes and flushes), so
// everything written is captured before run returns or os.Exit ends the
// run. Flush any bufio.Writer you wrap around them yourself.
//
// Built for another target, main.main runs as usual and Main does nothing
// visible.
func Main(f func()) {
	if userMain != nil {
		panic("plimsoll.Main called twice")
	}
	userMain = f
}

// runMain is the body of the wasi:cli/run export: 0 is ok, 1 is err.
func runMain() uint32 {
	if userMain == nil {
		fmt.Fprintln(os.Stderr, "plimsoll: no main function registered: add `func init() { plimsoll.Main(main) }` to package main")
		return 1
	}
	userMain()
	return 0
}
