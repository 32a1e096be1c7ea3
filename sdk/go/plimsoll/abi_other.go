//go:build !wasip1

package plimsoll

// Outside a plimsoll run (any target but GOOS=wasip1) there is no broker.

func brokerCall(string, Request) (Response, error) {
	return Response{}, ErrNoBroker
}

func brokerCallOrigin(string, Request, *uint32) (Response, error) {
	return Response{}, ErrNoBroker
}
