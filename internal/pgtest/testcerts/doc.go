// Package testcerts makes throwaway X.509 material for TLS tests: a CA, a
// server certificate for the loopback names, client certificates by common
// name, and a second, unrelated CA with its own certificates for the
// "wrong CA" cases. Everything is ECDSA P-256, valid for a day, written as
// PEM files into a directory the caller owns (keys with mode 0600).
//
// It is test support only: nothing here is fit for production keys.
package testcerts
