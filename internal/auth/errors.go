package auth

import "errors"

// ErrAuthFailed is wrapped by errors that mean the credentials were wrong
// (bad proof, bad server signature, an "e=" server-final).
var ErrAuthFailed = errors.New("authentication failed")

// ErrProtocol is wrapped by errors about malformed SCRAM messages or calls
// made out of order.
var ErrProtocol = errors.New("scram protocol violation")
