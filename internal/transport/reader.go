package transport

import (
	"bufio"
	"bytes"
	"io"
)

// Read buffer sizes: a Conn starts with readBase bytes and doubles its
// buffer, up to maxKeptRead, to hold a frame that does not fit; it keeps
// the grown buffer for the next large frame. A frame longer than that is
// gathered in pieces of maxKeptRead bytes, joined once: the buffer a
// connection keeps is bounded, and a frame of a few MiB is read with two
// copies of it, not with a doubling's copies and then one.
const (
	readBase    = 64 << 10
	maxKeptRead = 256 << 10
)

// frameReader is the part of bufio.Reader a Conn uses, with a buffer that
// grows to hold a whole frame. A frame larger than bufio's fixed buffer
// had to be gathered in pieces and joined: two copies of every byte of a
// large result, and two allocations, where this makes one of each for a
// frame up to maxKeptRead.
type frameReader struct {
	rd   io.Reader
	buf  []byte
	r, w int   // buf[r:w] is read and not yet consumed
	err  error // the last read's error, returned once
}

func newFrameReader(rd io.Reader) *frameReader {
	return &frameReader{rd: rd, buf: make([]byte, readBase)}
}

// Buffered is how many bytes can be had without reading.
func (b *frameReader) Buffered() int { return b.w - b.r }

// Size is the buffer's size: the most Peek can return.
func (b *frameReader) Size() int { return len(b.buf) }

// fill reads once more into the buffer's free end, moving what is
// buffered to its start first.
func (b *frameReader) fill() {
	if b.r > 0 {
		copy(b.buf, b.buf[b.r:b.w])
		b.w -= b.r
		b.r = 0
	}
	for range 100 {
		n, err := b.rd.Read(b.buf[b.w:])
		b.w += n
		if err != nil {
			b.err = err
			return
		}
		if n > 0 {
			return
		}
	}
	b.err = io.ErrNoProgress
}

// takeErr returns the pending read error and clears it.
func (b *frameReader) takeErr() error {
	err := b.err
	b.err = nil
	return err
}

// ReadByte returns the next byte.
func (b *frameReader) ReadByte() (byte, error) {
	for b.r == b.w {
		if b.err != nil {
			return 0, b.takeErr()
		}
		b.fill()
	}
	c := b.buf[b.r]
	b.r++
	return c, nil
}

// Unread puts back the byte ReadByte returned.
func (b *frameReader) Unread() {
	if b.r > 0 {
		b.r--
	}
}

// Peek returns the next n bytes without consuming them, reading as
// needed; with fewer, the error says why (bufio.ErrBufferFull when n is
// more than the buffer holds).
func (b *frameReader) Peek(n int) ([]byte, error) {
	for b.w-b.r < n && b.w-b.r < len(b.buf) && b.err == nil {
		b.fill()
	}
	if n > len(b.buf) {
		return b.buf[b.r:b.w], bufio.ErrBufferFull
	}
	if avail := b.w - b.r; avail < n {
		return b.buf[b.r:b.w], b.takeErr()
	}
	return b.buf[b.r : b.r+n], nil
}

// Discard consumes the next n buffered bytes (n is at most Buffered).
func (b *frameReader) Discard(n int) {
	b.r += n
	if b.r == b.w {
		b.r, b.w = 0, 0
	}
}

// grow doubles the buffer, keeping what it holds.
func (b *frameReader) grow() {
	buf := make([]byte, 2*len(b.buf))
	b.w = copy(buf, b.buf[b.r:b.w])
	b.r = 0
	b.buf = buf
}

// ReadSlice reads up to and including the next delim, as bufio's does:
// bufio.ErrBufferFull with a full buffer and no delim in it.
func (b *frameReader) ReadSlice(delim byte) ([]byte, error) {
	for {
		if i := bytes.IndexByte(b.buf[b.r:b.w], delim); i >= 0 {
			line := b.buf[b.r : b.r+i+1]
			b.r += i + 1
			return line, nil
		}
		if b.err != nil {
			line := b.buf[b.r:b.w]
			b.r = b.w
			return line, b.takeErr()
		}
		if b.w-b.r == len(b.buf) {
			line := b.buf[b.r:b.w]
			b.r = b.w
			return line, bufio.ErrBufferFull
		}
		b.fill()
	}
}
