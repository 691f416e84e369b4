//go:build !linux

package floor

import "errors"

func newLoops(int) (forwarder, error) {
	return nil, errors.New("the epoll forwarders need Linux")
}

func newTxPool(int) (forwarder, error) {
	return nil, errors.New("the txpool forwarder needs Linux")
}

func newUring() (forwarder, error) {
	return nil, errors.New("the io-uring forwarder needs Linux")
}

func uringProbe() error { return errors.New("io_uring is Linux's") }
