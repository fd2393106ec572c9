package wire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

var requestIDs atomic.Int32

// NextRequestID returns a fresh message id.
func NextRequestID() int32 { return requestIDs.Add(1) }

// Client is one connection from a mongosim member to another member: the
// simulator's heartbeats, votes and oplog fetches travel over the wire just as
// mongod's do. It reconnects on the next call after a failure. Calls are
// serialised; use one Client per concurrent purpose.
type Client struct {
	Addr string

	mu   sync.Mutex
	conn net.Conn
	buf  []byte
}

// CommandError is an {ok:0} reply from the peer.
type CommandError struct {
	Code     int32
	CodeName string
	Message  string
}

func (e *CommandError) Error() string {
	return fmt.Sprintf("(%s) %s", e.CodeName, e.Message)
}

// Call sends cmd (which must carry $db) and returns the reply body. An
// {ok:0} reply is returned as *CommandError alongside the body.
func (c *Client) Call(ctx context.Context, cmd any) (bson.Raw, error) {
	body, err := bson.Marshal(cmd)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", c.Addr)
		if err != nil {
			return nil, err
		}
		c.conn = conn
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(30 * time.Second)
	}
	conn := c.conn
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	msg := AppendMsg(c.buf[:0], NextRequestID(), 0, 0, body)
	if _, err := c.conn.Write(msg); err != nil {
		c.closeLocked()
		return nil, err
	}
	var reply Message
	reply, c.buf, err = Read(c.conn, msg)
	if err != nil {
		c.closeLocked()
		return nil, err
	}
	if reply.OpCode != OpMsg {
		c.closeLocked()
		return nil, fmt.Errorf("%w: reply opcode %d", ErrMalformed, reply.OpCode)
	}
	out := bson.Raw(append([]byte(nil), reply.Body...))
	if okv, err := out.LookupErr("ok"); err == nil {
		if f, isNum := okv.AsFloat64OK(); isNum && f != 1 {
			ce := &CommandError{}
			code, _ := out.Lookup("code").AsInt64OK()
			ce.Code = int32(code)
			ce.CodeName, _ = out.Lookup("codeName").StringValueOK()
			ce.Message, _ = out.Lookup("errmsg").StringValueOK()
			return out, ce
		}
	}
	return out, nil
}

// Close drops the connection.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeLocked()
}

func (c *Client) closeLocked() {
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn = nil
	}
}

// IsCommandError reports whether err is a peer's {ok:0} with the given code.
func IsCommandError(err error, code int32) bool {
	var ce *CommandError
	return errors.As(err, &ce) && ce.Code == code
}
