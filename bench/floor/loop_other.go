//go:build !linux

package floor

import "errors"

func newLoops(int) (forwarder, error) {
	return nil, errors.New("the epoll forwarders need Linux")
}

func newTxPool(int) (forwarder, error) {
	return nil, errors.New("the txpool forwarder needs Linux")
}
