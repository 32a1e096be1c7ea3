package plimsoll

import "fmt"

// ErrorKind says why a broker call did not produce a response. Its values
// are the cases of the WIT variant call-error, in the WIT's order (they are
// also the variant's discriminants).
type ErrorKind uint8

const (
	// Denied: the grant does not allow this call (unknown grant, method or
	// route not listed, non-canonical path, refused header). Detail says
	// which, without echoing the path or any header value.
	Denied ErrorKind = iota
	// BudgetExhausted: the run has used its whole call budget.
	BudgetExhausted
	// RequestTooLarge: the request body is larger than the request cap.
	RequestTooLarge
	// ResponseTooLarge: the upstream answered with more than the response
	// cap.
	ResponseTooLarge
	// Timeout: the upstream did not answer within the per-call timeout.
	Timeout
	// Upstream: the upstream could not be reached, answered with garbage,
	// or the host shed the call. Detail says which.
	Upstream
)

// kindNames are the WIT case names, indexed by ErrorKind.
var kindNames = [...]string{
	Denied:           "denied",
	BudgetExhausted:  "budget-exhausted",
	RequestTooLarge:  "request-too-large",
	ResponseTooLarge: "response-too-large",
	Timeout:          "timeout",
	Upstream:         "upstream",
}

// String returns the WIT case name, e.g. "budget-exhausted".
func (k ErrorKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("ErrorKind(%d)", uint8(k))
}

// CallError is a typed refusal from the broker. Every broker error is a
// *CallError; match it with errors.As.
type CallError struct {
	// Kind is the call-error case.
	Kind ErrorKind
	// Detail is the host's message for Denied and Upstream; empty for the
	// other kinds.
	Detail string
}

// Error returns e.g. "plimsoll broker: denied: unknown grant".
func (e *CallError) Error() string {
	if e.Detail == "" {
		return "plimsoll broker: " + e.Kind.String()
	}
	return "plimsoll broker: " + e.Kind.String() + ": " + e.Detail
}
