//go:build !linux

package session

import "context"

func (s *Session) mayLoop() bool                  { return false }
func (s *Session) enterLoop(context.Context) bool { return false }
func (s *Session) kickLoop()                      {}
