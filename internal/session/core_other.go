//go:build !linux

package session

import (
	"context"
	"errors"

	"go.uber.org/zap"
)

// Core is the transaction core; only Linux has one.
type Core struct{}

type coreClient struct{}

type corePost struct {
	kind postKind
	cl   *coreClient
}

type postKind uint8

const (
	postHandBack postKind = 3
	postCancel   postKind = 5
)

// NewCore reports that this build has no transaction core.
func NewCore(*zap.Logger, CoreMetrics) (*Core, error) {
	return nil, errors.New("transaction core: Linux only")
}

// Close does nothing.
func (c *Core) Close() {}

func (c *Core) post(corePost) bool { return false }

func (s *Session) adoptCore(context.Context) bool { return false }

func (s *Session) coreMayAdopt() bool { return false }

func (s *Session) killCoreLocked(*coreClient, string, string) {}

func (s *Session) coreLocked() *coreClient { return nil }
