// Package testbuf holds Buffer, the output of a child process that a test
// reads while the child still writes it (exec.Cmd's copying goroutines).
// It owns nothing else: no process handling, no parsing of what is
// written.
package testbuf
