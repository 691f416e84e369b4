// Package coordtest holds test fakes for package coordinator: a manual
// Clock whose timers fire only when the test advances it, and a Member that
// models a user pool as a list of connections, each holding its permit.
//
// Both are safe for concurrent use. A Member never calls into the
// coordinator while holding its own lock except through Permit.Release,
// which the coordinator allows.
package coordtest
