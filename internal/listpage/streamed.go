package listpage

import (
	"encoding/json"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
)

// DecodeStreamed decodes a list from r, calling fn with each item, and
// returns the list's metadata. Keys match case-sensitively, as the API
// server's own decoding does (sigs.k8s.io/json): a tenant's "Replicas"
// beside "replicas" in a custom resource that keeps unknown fields is not
// what nsman reads.
func DecodeStreamed[T any](r io.Reader, fn func(*T) error) (metav1.ListMeta, error) {
	dec := sigsjson.NewDecoderCaseSensitivePreserveInts(r)
	var meta metav1.ListMeta
	tok, err := dec.Token()
	switch {
	case err != nil:
		return meta, fmt.Errorf("decode a list: %w", err)
	case tok == nil: // null: no list, no items
		return meta, expectEOF(dec)
	case !isDelim(tok, '{'):
		return meta, fmt.Errorf("decode a list: %v where an object was expected", tok)
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return meta, fmt.Errorf("decode a list: %w", err)
		}
		switch key {
		case "metadata":
			err = dec.Decode(&meta)
		case "items":
			err = decodeItems(dec, fn)
		default:
			var skipped json.RawMessage
			err = dec.Decode(&skipped)
		}
		if err != nil {
			return meta, fmt.Errorf("decode a list: %w", err)
		}
	}
	if _, err := dec.Token(); err != nil { // '}'
		return meta, fmt.Errorf("decode a list: %w", err)
	}
	return meta, expectEOF(dec)
}

// expectEOF fails unless dec has nothing more than white space to read.
func expectEOF(dec sigsjson.Decoder) error {
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("decode a list: data after the list (%v)", err)
	}
	return nil
}

// decodeItems decodes a list's items, an array or null, calling fn with
// each.
func decodeItems[T any](dec sigsjson.Decoder, fn func(*T) error) error {
	tok, err := dec.Token()
	if err != nil || tok == nil {
		return err
	}
	if !isDelim(tok, '[') {
		return fmt.Errorf("items: %v where an array was expected", tok)
	}
	for dec.More() {
		var item T
		if err := dec.Decode(&item); err != nil {
			return err
		}
		if err := fn(&item); err != nil {
			return err
		}
	}
	_, err = dec.Token() // ']'
	return err
}

// isDelim reports whether tok is the delimiter d. sigs.k8s.io/json's
// decoder returns a Delim type of its own, which prints as encoding/json's.
func isDelim(tok json.Token, d rune) bool {
	s, ok := tok.(fmt.Stringer)
	return ok && s.String() == string(d)
}
