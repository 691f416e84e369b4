package floor

import "encoding/binary"

// scanner follows the message boundaries of one direction of a protocol v3
// stream (after the startup packet: every message has a type byte and a
// length) from the bytes as they pass, without keeping them: ModeTxPool
// needs only where messages end, their types and ReadyForQuery's status.
type scanner struct {
	hdr    [5]byte
	hn     int  // header bytes held; 5 while in a body
	rem    int  // body bytes still to come
	fresh  bool // the next body byte is the first
	status byte // the first body byte of the message in hand
}

// scanned is what one feed saw end.
type scanned struct {
	syncs     int  // Query, Sync and FunctionCall (client side)
	readys    int  // ReadyForQuery (server side)
	status    byte // the last ReadyForQuery's transaction status
	ended     bool // at least one message other than Terminate ended
	lastSync  bool // the last message that ended was a Query, Sync or FunctionCall
	terminate bool // a Terminate ended
	bad       bool // a length below 4: the stream cannot be followed
}

// maxScanLen bounds a message length the scanner accepts, as PostgreSQL
// bounds what it reads (1 GiB).
const maxScanLen = 1 << 30

// feed advances over b and reports what ended in it.
func (sc *scanner) feed(b []byte) (r scanned) {
	for len(b) > 0 {
		if sc.hn < 5 {
			k := copy(sc.hdr[sc.hn:], b)
			sc.hn += k
			b = b[k:]
			if sc.hn < 5 {
				return r
			}
			l := binary.BigEndian.Uint32(sc.hdr[1:5])
			if l < 4 || l > maxScanLen {
				r.bad = true
				return r
			}
			sc.rem = int(l) - 4
			sc.fresh = true
			sc.status = 0
			if sc.rem == 0 {
				sc.end(&r)
			}
			continue
		}
		if sc.fresh {
			sc.status = b[0]
			sc.fresh = false
		}
		k := min(sc.rem, len(b))
		sc.rem -= k
		b = b[k:]
		if sc.rem == 0 {
			sc.end(&r)
		}
	}
	return r
}

func (sc *scanner) end(r *scanned) {
	typ := sc.hdr[0]
	sc.hn = 0
	if typ == 'X' {
		r.terminate = true // the last word: it changes nothing else
		return
	}
	r.ended = true
	r.lastSync = false
	switch typ {
	case 'Q', 'S', 'F':
		r.syncs++
		r.lastSync = true
	case 'Z':
		r.readys++
		r.status = sc.status
	}
}

// boundary reports whether the scanner stands between two messages.
func (sc *scanner) boundary() bool { return sc.hn == 0 }
