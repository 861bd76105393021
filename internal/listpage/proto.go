package listpage

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A list of metadata (PartialObjectMetadataList) comes as protobuf where
// the API server serves it, as client-go's metadata client asks for it:
// over 10,000 namespaces and 10,000 pods, a sweep that decoded the JSON
// list spent twice the CPU of one that decodes protobuf (make bench, rules).
// client-go decodes a page whole; DecodeMetadata reads the protobuf as it
// arrives, one item at a time, as DecodeStreamed does JSON (hand-written
// over encoding/binary's varints: no library streams a list's items).

// protoMagic begins every protobuf body the API server sends, before the
// runtime.Unknown that wraps the object.
var protoMagic = []byte("k8s\x00")

// MaxProtoItem bounds one item of a protobuf list: the API server stores
// objects of at most some 1.5 MiB, and sends nothing larger; a length past
// this is a body that is not what it says, refused before it is read.
const MaxProtoItem = 8 << 20

// Field numbers of runtime.Unknown's raw bytes and of a list's metadata
// and items, and the wire type of length-delimited fields.
const (
	unknownRaw  = 2
	listMeta    = 1
	listItems   = 2
	wireBytes   = 2
	wireVarint  = 0
	wireFixed64 = 1
	wireFixed32 = 5
)

// errNoList is a protobuf body that holds no list: apimachinery decodes it
// as an empty one; the API server sends none, and a body cut short may be
// one.
var errNoList = errors.New("decode a protobuf list: no list in the body")

// DecodeMetadata decodes a list of metadata from r, protobuf or JSON as its
// first bytes say, calling fn with each item, and returns the list's
// metadata: a JSON item is decoded into a T (see DecodeStreamed), a
// protobuf one into metav1.PartialObjectMetadata, then made a T by
// fromProto.
func DecodeMetadata[T any](r io.Reader, fn func(*T) error, fromProto func(*metav1.PartialObjectMetadata) *T) (metav1.ListMeta, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if head, _ := br.Peek(len(protoMagic)); !bytes.Equal(head, protoMagic) {
		return DecodeStreamed(br, fn)
	}
	_, _ = br.Discard(len(protoMagic))
	return decodeProtoList(br, func(item *metav1.PartialObjectMetadata) error { return fn(fromProto(item)) })
}

// decodeProtoList reads the runtime.Unknown that wraps a protobuf list and
// decodes the list in its raw bytes as they arrive.
func decodeProtoList(br *bufio.Reader, fn func(*metav1.PartialObjectMetadata) error) (metav1.ListMeta, error) {
	var meta metav1.ListMeta
	w := &wire{r: br, left: -1}
	for listed := false; ; {
		num, typ, err := w.tag()
		if err == io.EOF && !listed {
			return meta, errNoList
		}
		if err == io.EOF {
			return meta, nil
		}
		if err != nil {
			return meta, fmt.Errorf("decode a protobuf list: %w", err)
		}
		if num != unknownRaw || typ != wireBytes {
			if err := w.skip(typ); err != nil {
				return meta, fmt.Errorf("decode a protobuf list: %w", err)
			}
			continue
		}
		n, err := w.varint()
		if err != nil {
			return meta, fmt.Errorf("decode a protobuf list: %w", err)
		}
		list := &wire{r: br, left: int64(n)}
		if err := list.items(&meta, fn); err != nil {
			return meta, fmt.Errorf("decode a protobuf list: %w", err)
		}
		listed = true
	}
}

// wire reads protobuf's wire format from r: left bytes of a message, or
// (-1) to the end of r.
type wire struct {
	r    *bufio.Reader
	left int64
	buf  []byte
}

// ReadByte reads one byte of the message, io.EOF past its end; a body that
// ends within the message is cut short.
func (w *wire) ReadByte() (byte, error) {
	if w.left == 0 {
		return 0, io.EOF
	}
	b, err := w.r.ReadByte()
	switch {
	case err == io.EOF && w.left > 0:
		return 0, io.ErrUnexpectedEOF
	case err == nil && w.left > 0:
		w.left--
	}
	return b, err
}

// varint reads a varint; a message that ends in one is cut short.
func (w *wire) varint() (uint64, error) {
	v, err := binary.ReadUvarint(w)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return v, err
}

// tag reads a field's number and wire type, io.EOF at the message's end.
func (w *wire) tag() (num uint64, typ byte, err error) {
	v, err := binary.ReadUvarint(w)
	if err != nil {
		return 0, 0, err
	}
	return v >> 3, byte(v & 7), nil
}

// bytes reads a length-delimited field's bytes, at most max of them, into
// a buffer reused by the next call.
func (w *wire) bytes(max uint64) ([]byte, error) {
	n, err := w.varint()
	switch {
	case err != nil:
		return nil, err
	case n > max:
		return nil, fmt.Errorf("a field of %d bytes, more than the %d an object may have", n, max)
	case w.left >= 0 && int64(n) > w.left:
		return nil, io.ErrUnexpectedEOF
	}
	if uint64(cap(w.buf)) < n {
		w.buf = make([]byte, n)
	}
	w.buf = w.buf[:n]
	if _, err := io.ReadFull(w.r, w.buf); err != nil {
		return nil, errors.Join(io.ErrUnexpectedEOF, err)
	}
	if w.left > 0 {
		w.left -= int64(n)
	}
	return w.buf, nil
}

// skip reads past a field of wire type typ whose tag was read.
func (w *wire) skip(typ byte) error {
	var n uint64
	switch typ {
	case wireVarint:
		_, err := w.varint()
		return err
	case wireFixed64:
		n = 8
	case wireFixed32:
		n = 4
	case wireBytes:
		var err error
		if n, err = w.varint(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("wire type %d", typ)
	}
	if w.left >= 0 && int64(n) > w.left {
		return io.ErrUnexpectedEOF
	}
	if _, err := w.r.Discard(int(min(n, 1<<62))); err != nil {
		return errors.Join(io.ErrUnexpectedEOF, err)
	}
	if w.left > 0 {
		w.left -= int64(n)
	}
	return nil
}

// items reads a PartialObjectMetadataList, calling fn with each item as it
// is read, and keeping its metadata in meta.
func (w *wire) items(meta *metav1.ListMeta, fn func(*metav1.PartialObjectMetadata) error) error {
	for {
		num, typ, err := w.tag()
		switch {
		case err == io.EOF:
			return nil
		case err != nil:
			return err
		case typ != wireBytes || (num != listMeta && num != listItems):
			if err := w.skip(typ); err != nil {
				return err
			}
			continue
		}
		data, err := w.bytes(MaxProtoItem)
		if err != nil {
			return err
		}
		if num == listMeta {
			if err := meta.Unmarshal(data); err != nil {
				return fmt.Errorf("metadata: %w", err)
			}
			continue
		}
		item := &metav1.PartialObjectMetadata{}
		if err := item.Unmarshal(data); err != nil {
			return fmt.Errorf("item: %w", err)
		}
		if err := fn(item); err != nil {
			return err
		}
	}
}
