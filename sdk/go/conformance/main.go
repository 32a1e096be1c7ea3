// Command conformance is the Go SDK's agent for plimsoll's guest SDK
// conformance kit (conformance/README.md at the repository root). It reads
// protocol commands from stdin and performs each through the SDK's public
// API and the standard library, as a user's agent would.
package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"plimsoll.dev/guest/plimsoll"
)

func init() { plimsoll.Main(main) }

func main() {
	input, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reading stdin:", err)
		os.Exit(1)
	}
	lines := strings.Split(string(input), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for _, line := range lines {
		if err := run(strings.Split(line, " "), len(input)); err != nil {
			fmt.Fprintf(os.Stderr, "bad command %q: %v\n", line, err)
		}
	}
}

// run performs one command. An error means the command's fields were
// malformed; it goes to stderr and the agent goes on.
func run(f []string, stdinLen int) error {
	switch f[0] {
	case "print", "eprint":
		if len(f) != 2 {
			return errors.New("want 1 field")
		}
		b, err := unhex(f[1])
		if err != nil {
			return err
		}
		out := os.Stdout
		if f[0] == "eprint" {
			out = os.Stderr
		}
		out.Write(append(b, '\n'))
	case "stdin":
		say("stdin %d", stdinLen)
	case "env":
		say("env %d", len(os.Environ()))
	case "args":
		say("args %d", max(len(os.Args)-1, 0))
	case "clock":
		say("clock %s", okBad(clockOK()))
	case "random":
		say("random %s", okBad(randomOK()))
	case "write":
		return write(f)
	case "read":
		return read(f)
	case "call":
		return call(f)
	case "origin":
		return origin(f)
	case "exit":
		if len(f) != 2 {
			return errors.New("want 1 field")
		}
		code, err := strconv.Atoi(f[1])
		if err != nil {
			return err
		}
		// os.Stdout and os.Stderr are unbuffered: nothing to flush.
		os.Exit(code)
	default:
		say("unsupported %s", f[0])
	}
	return nil
}

// say prints one line to stdout.
func say(format string, args ...any) {
	fmt.Fprintf(os.Stdout, format+"\n", args...)
}

func okBad(ok bool) string {
	if ok {
		return "ok"
	}
	return "bad"
}

func clockOK() bool {
	wall := time.Now()
	first := time.Now()
	second := time.Now()
	// Sub uses the monotonic readings time.Now carries.
	return wall.Unix() > 1_600_000_000 && second.Sub(first) >= 0
}

func randomOK() bool {
	a, b := make([]byte, 16), make([]byte, 16)
	if _, err := rand.Read(a); err != nil {
		return false
	}
	if _, err := rand.Read(b); err != nil {
		return false
	}
	zero := make([]byte, 16)
	return !bytes.Equal(a, b) && !bytes.Equal(a, zero) && !bytes.Equal(b, zero)
}

func write(f []string) error {
	if len(f) != 3 {
		return errors.New("want 2 fields")
	}
	path, err := unhex(f[1])
	if err != nil {
		return err
	}
	data, err := unhex(f[2])
	if err != nil {
		return err
	}
	file, err := os.Create(string(path))
	if err != nil {
		say("err io")
		return nil
	}
	n, err := file.Write(data)
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		say("err io")
		return nil
	}
	say("wrote %d", n)
	return nil
}

func read(f []string) error {
	if len(f) != 2 {
		return errors.New("want 1 field")
	}
	path, err := unhex(f[1])
	if err != nil {
		return err
	}
	data, err := os.ReadFile(string(path))
	if err != nil {
		say("err io")
		return nil
	}
	say("read %s", tohex(data))
	return nil
}

// call: call API METHOD PATH HEADERS BODY
func call(f []string) error {
	if len(f) != 6 {
		return errors.New("want 5 fields")
	}
	api, err := unhex(f[1])
	if err != nil {
		return err
	}
	req, err := request(f[2:])
	if err != nil {
		return err
	}
	resp, err := plimsoll.Call(string(api), req)
	report(resp, err)
	return nil
}

// origin: origin ORIGIN TIMEOUT METHOD PATH HEADERS BODY
func origin(f []string) error {
	if len(f) != 7 {
		return errors.New("want 6 fields")
	}
	o, err := unhex(f[1])
	if err != nil {
		return err
	}
	var timeout *uint32
	if f[2] != "-" {
		ms, err := strconv.ParseUint(f[2], 10, 32)
		if err != nil {
			return err
		}
		t := uint32(ms)
		timeout = &t
	}
	req, err := request(f[3:])
	if err != nil {
		return err
	}
	resp, err := plimsoll.CallOrigin(string(o), req, timeout)
	report(resp, err)
	return nil
}

// request parses METHOD PATH HEADERS BODY.
func request(f []string) (plimsoll.Request, error) {
	path, err := unhex(f[1])
	if err != nil {
		return plimsoll.Request{}, err
	}
	headers, err := parseHeaders(f[2])
	if err != nil {
		return plimsoll.Request{}, err
	}
	body, err := parseBody(f[3])
	if err != nil {
		return plimsoll.Request{}, err
	}
	return plimsoll.Request{Method: f[0], Path: string(path), Headers: headers, Body: body}, nil
}

// parseHeaders parses `-` or NAMEHEX:VALUEHEX,...
func parseHeaders(s string) ([]plimsoll.Header, error) {
	if s == "-" {
		return nil, nil
	}
	var headers []plimsoll.Header
	for _, pair := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(pair, ":")
		if !ok {
			return nil, fmt.Errorf("header %q has no ':'", pair)
		}
		n, err := unhex(name)
		if err != nil {
			return nil, err
		}
		v, err := unhex(value)
		if err != nil {
			return nil, err
		}
		headers = append(headers, plimsoll.Header{Name: string(n), Value: string(v)})
	}
	return headers, nil
}

// parseBody parses `-`, hex:DATA or fill:N:BYTEHEX.
func parseBody(s string) ([]byte, error) {
	switch {
	case s == "-":
		return nil, nil
	case strings.HasPrefix(s, "hex:"):
		return unhex(strings.TrimPrefix(s, "hex:"))
	case strings.HasPrefix(s, "fill:"):
		count, byteHex, ok := strings.Cut(strings.TrimPrefix(s, "fill:"), ":")
		if !ok {
			return nil, errors.New("fill body wants N:BYTEHEX")
		}
		n, err := strconv.Atoi(count)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("bad fill count %q", count)
		}
		b, err := hex.DecodeString(byteHex)
		if err != nil || len(b) != 1 {
			return nil, fmt.Errorf("bad fill byte %q", byteHex)
		}
		return bytes.Repeat(b, n), nil
	}
	return nil, fmt.Errorf("bad body %q", s)
}

// report prints a call's outcome: the response, or the typed error.
func report(resp plimsoll.Response, err error) {
	var ce *plimsoll.CallError
	switch {
	case errors.As(err, &ce):
		switch ce.Kind {
		case plimsoll.Denied, plimsoll.Upstream:
			say("err %s %s", ce.Kind, tohex([]byte(ce.Detail)))
		default:
			say("err %s", ce.Kind)
		}
	case err != nil:
		// Not a broker refusal (cannot happen inside plimsoll).
		fmt.Fprintln(os.Stderr, "call failed:", err)
		say("err sdk")
	default:
		say("ok %d %s", resp.Status, tohex(resp.Body))
		for _, h := range resp.Headers {
			if strings.HasPrefix(strings.ToLower(h.Name), "x-conformance") {
				say("header %s %s", h.Name, tohex([]byte(h.Value)))
			}
		}
	}
}

// unhex decodes a protocol field: lowercase hex, or `-` for empty.
func unhex(s string) ([]byte, error) {
	if s == "-" {
		return nil, nil
	}
	return hex.DecodeString(s)
}

// tohex encodes a protocol field: lowercase hex, or `-` for empty.
func tohex(b []byte) string {
	if len(b) == 0 {
		return "-"
	}
	return hex.EncodeToString(b)
}
