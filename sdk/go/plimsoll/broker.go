package plimsoll

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// Header is one HTTP header: a name and a value. Headers travel as ordered
// lists, so a name may appear more than once.
type Header struct {
	Name  string
	Value string
}

// Request is an HTTP request for the broker to make under a grant.
type Request struct {
	// Method is GET, PUT, POST, DELETE or PATCH (case-insensitive); the host
	// denies anything else.
	Method string
	// Path is the absolute, canonical path on the grant's API, optionally
	// with a query string, e.g. "/v1/orders/42?expand=items". The host
	// denies non-canonical paths (".", "..", empty segments, encoded "/")
	// rather than normalising them.
	Path string
	// Headers are extra request headers. They must pass the grant's
	// allow-list; authorization, cookie, host, proxy-* and hop-by-hop
	// headers are refused.
	Headers []Header
	// Body is the request body, at most 1 MiB.
	Body []byte
}

// Response is the upstream's answer.
type Response struct {
	// Status is the upstream's HTTP status code. Redirects are not
	// followed: a 3xx arrives as it is.
	Status int
	// Headers are the response headers in the order received, without
	// hop-by-hop and set-cookie headers.
	Headers []Header
	// Body is the response body, at most the grant's response cap.
	Body []byte
}

// Header returns the value of the first response header named name
// (compared case-insensitively), or "" when there is none.
func (r Response) Header(name string) string {
	for _, h := range r.Headers {
		if strings.EqualFold(h.Name, name) {
			return h.Value
		}
	}
	return ""
}

// Text returns the body as a string.
func (r Response) Text() string {
	return string(r.Body)
}

// ErrNoBroker is returned by every call in a program built for a target
// other than GOOS=wasip1, where there is no plimsoll host to ask.
var ErrNoBroker = errors.New("plimsoll: no broker: the program is not running inside plimsoll (build with GOOS=wasip1)")

// Call makes one HTTP call under the grant named api. A refusal is a
// *CallError (use errors.As); the run goes on after it.
func Call(api string, req Request) (Response, error) {
	if err := checkUTF8(api, req); err != nil {
		return Response{}, err
	}
	return brokerCall(api, req)
}

// CallOrigin makes one HTTP call to origin (scheme://host[:port]) under the
// run's one grant whose base URL is that origin, with every check of Call.
// timeoutMs, when not nil, shortens the per-call timeout; it never
// lengthens it. A refusal is a *CallError.
func CallOrigin(origin string, req Request, timeoutMs *uint32) (Response, error) {
	if err := checkUTF8(origin, req); err != nil {
		return Response{}, err
	}
	return brokerCallOrigin(origin, req, timeoutMs)
}

// Get makes GET path under the grant api.
func Get(api, path string) (Response, error) {
	return Call(api, Request{Method: "GET", Path: path})
}

// Post makes POST path with body under the grant api.
func Post(api, path string, body []byte) (Response, error) {
	return Call(api, Request{Method: "POST", Path: path, Body: body})
}

// Put makes PUT path with body under the grant api.
func Put(api, path string, body []byte) (Response, error) {
	return Call(api, Request{Method: "PUT", Path: path, Body: body})
}

// Patch makes PATCH path with body under the grant api.
func Patch(api, path string, body []byte) (Response, error) {
	return Call(api, Request{Method: "PATCH", Path: path, Body: body})
}

// Delete makes DELETE path under the grant api.
func Delete(api, path string) (Response, error) {
	return Call(api, Request{Method: "DELETE", Path: path})
}

// checkUTF8 refuses, before anything reaches the host, a request whose
// strings are not valid UTF-8: the component model carries only valid
// UTF-8 strings, and the host would trap the guest instead of answering.
// The refusal is a Denied CallError; it is not in the run's CallTrace.
func checkUTF8(target string, req Request) error {
	bad := ""
	switch {
	case !utf8.ValidString(target):
		bad = "the grant name or origin"
	case !utf8.ValidString(req.Method):
		bad = "the method"
	case !utf8.ValidString(req.Path):
		bad = "the path"
	}
	for _, h := range req.Headers {
		if bad == "" && !(utf8.ValidString(h.Name) && utf8.ValidString(h.Value)) {
			bad = "a header"
		}
	}
	if bad == "" {
		return nil
	}
	return &CallError{Kind: Denied, Detail: bad + " is not valid UTF-8 (refused by the SDK, nothing sent)"}
}
