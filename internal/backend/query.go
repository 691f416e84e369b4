package backend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/doorman-go/doorman/internal/protocol"
)

// Result is what Query returns: the column names and the rows in text
// format, a nil value being SQL NULL. It owns its memory.
type Result struct {
	Columns []string
	Rows    [][]*string
}

// ErrResultTooLarge is returned by Query for a result past its bounds; the
// connection stays usable.
var ErrResultTooLarge = errors.New("query result exceeds its bound")

// Query runs sql with text parameters through the extended protocol
// (unnamed statement and portal), so that arguments are never spliced
// into SQL. At most maxRows rows and maxBytes bytes of row data are kept:
// a larger result is read to the end and ErrResultTooLarge returned, so
// memory stays bounded by the caller, never by what the query returns.
// An ErrorResponse comes back as a *ServerError after ReadyForQuery, a
// transport failure marks the connection Broken.
func (c *Conn) Query(ctx context.Context, sql string, args []string, maxRows, maxBytes int) (Result, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = c.nc.SetDeadline(dl)
		defer c.nc.SetDeadline(time.Time{})
	}
	params := make([][]byte, len(args))
	for i, a := range args {
		params[i] = []byte(a)
	}
	b := protocol.Parse{Query: sql}.Encode(nil)
	b = protocol.Bind{Params: params}.Encode(b)
	b = protocol.Describe{ObjectType: protocol.ObjectPortal}.Encode(b)
	b = protocol.Execute{}.Encode(b)
	b = protocol.Sync{}.Encode(b)
	if _, err := c.nc.Write(b); err != nil {
		c.Broken = true
		return Result{}, fmt.Errorf("send query: %w", err)
	}
	var (
		res   Result
		first error
		size  int
	)
	for {
		f, err := c.Reader.Next()
		if err != nil {
			c.Broken = true
			return Result{}, fmt.Errorf("read reply: %w", err)
		}
		switch f.Type() {
		case protocol.MsgErrorResponse:
			if first == nil {
				n := protocol.Notice{}
				if err := n.Decode(f.Body()); err != nil {
					c.Broken = true
					return Result{}, err
				}
				first = &ServerError{Notice: n}
			}
		case protocol.MsgRowDescription:
			var rd protocol.RowDescription
			if err := rd.Decode(f.Body()); err != nil {
				c.Broken = true
				return Result{}, err
			}
			for _, fd := range rd.Fields {
				res.Columns = append(res.Columns, fd.Name)
			}
		case protocol.MsgDataRow:
			if first != nil {
				continue
			}
			size += len(f.Body())
			if len(res.Rows) >= maxRows || size > maxBytes {
				first = fmt.Errorf("%w: more than %d rows or %d bytes", ErrResultTooLarge, maxRows, maxBytes)
				res.Rows = nil
				continue
			}
			var dr protocol.DataRow
			if err := dr.Decode(f.Body()); err != nil {
				c.Broken = true
				return Result{}, err
			}
			row := make([]*string, len(dr.Values))
			for i, v := range dr.Values {
				if v != nil {
					s := string(v)
					row[i] = &s
				}
			}
			res.Rows = append(res.Rows, row)
		case protocol.MsgParameterStatus:
			c.ApplyParameterStatus(f.Body())
		case protocol.MsgReadyForQuery:
			c.TxStatus = protocol.ReadyForQueryStatus(f)
			c.Reader.Shrink()
			if first != nil {
				return Result{}, first
			}
			return res, nil
		}
	}
}
