//go:build wasip1

package plimsoll

// wasiCliRun is the world agent's one export. Its core signature is
// () -> i32: result<_, _> flattens to its discriminant, 0 for ok.
//
//go:wasmexport wasi:cli/run@0.2.12#run
func wasiCliRun() uint32 {
	return runMain()
}
