package soak

import (
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Outcome is how one piece of work ended.
type Outcome int

// Outcomes.
const (
	OK         Outcome = iota
	Expected           // an error caused by the test's own kill
	Unexpected         // any other error: a failure of the soak
	Cut                // interrupted by the end of the run; not counted
)

// maxErrorTexts bounds the distinct unexpected error texts kept.
const maxErrorTexts = 50

// Counters are the totals of all workers. The counts are atomics so that
// workers never wait for each other; texts is the only locked state.
type Counters struct {
	ok, expected, unexpected [numKinds]atomic.Int64

	mu    sync.Mutex
	texts map[string]*ErrorText // unexpected errors by kind and errorShape
}

// ErrorText is one sort of unexpected error and how often it happened.
type ErrorText struct {
	Kind  Kind
	Text  string // the first error of its shape, in full
	Count int64
}

// Add counts one outcome of kind; err is the error for Unexpected. It
// returns true when err is an unexpected error not seen before.
func (c *Counters) Add(k Kind, o Outcome, err error) bool {
	switch o {
	case OK:
		c.ok[k].Add(1)
	case Expected:
		c.expected[k].Add(1)
	case Unexpected:
		c.unexpected[k].Add(1)
		return c.addText(k, err)
	}
	return false
}

func (c *Counters) addText(k Kind, err error) bool {
	text := "<nil>"
	if err != nil {
		text = err.Error()
	}
	if len(text) > 300 {
		text = text[:300] + "..."
	}
	key := k.String() + ": " + errorShape(text)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.texts == nil {
		c.texts = map[string]*ErrorText{}
	}
	if e, ok := c.texts[key]; ok {
		e.Count++
		return false
	}
	if len(c.texts) >= maxErrorTexts {
		key = "other"
		if e, ok := c.texts[key]; ok {
			e.Count++
			return false
		}
		text = "(more distinct texts than kept)"
	}
	c.texts[key] = &ErrorText{Kind: k, Text: text, Count: 1}
	return true
}

// errorShape is text with its numbers (row counts, ids) replaced by "#",
// so that errors differing only in them count as one; five-character
// SQLSTATEs are kept.
func errorShape(text string) string {
	const sqlstate = "SQLSTATE "
	var b strings.Builder
	inNumber := false
	for i := 0; i < len(text); i++ {
		if strings.HasPrefix(text[i:], sqlstate) && i+len(sqlstate)+5 <= len(text) {
			b.WriteString(text[i : i+len(sqlstate)+5])
			i += len(sqlstate) + 4
			inNumber = false
			continue
		}
		c := text[i]
		if c >= '0' && c <= '9' {
			if !inNumber {
				b.WriteByte('#')
			}
			inNumber = true
			continue
		}
		inNumber = false
		b.WriteByte(c)
	}
	return b.String()
}

// Totals is a snapshot of the counters.
type Totals struct {
	OK, Expected, Unexpected [numKinds]int64
}

// Snapshot reads the counters (each atomically, not all at one instant).
func (c *Counters) Snapshot() Totals {
	var t Totals
	for k := range numKinds {
		t.OK[k] = c.ok[k].Load()
		t.Expected[k] = c.expected[k].Load()
		t.Unexpected[k] = c.unexpected[k].Load()
	}
	return t
}

// Sub is t minus an earlier snapshot.
func (t Totals) Sub(prev Totals) Totals {
	for k := range numKinds {
		t.OK[k] -= prev.OK[k]
		t.Expected[k] -= prev.Expected[k]
		t.Unexpected[k] -= prev.Unexpected[k]
	}
	return t
}

// Sum adds up one of the arrays.
func Sum(a [numKinds]int64) int64 {
	var n int64
	for _, v := range a {
		n += v
	}
	return n
}

// ErrorTexts are the distinct unexpected errors, most frequent first.
func (c *Counters) ErrorTexts() []ErrorText {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]ErrorText, 0, len(c.texts))
	for _, e := range c.texts {
		out = append(out, *e)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Text < out[j].Text
	})
	return out
}
