package links

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Action is what a link does to its namespace.
type Action string

const (
	// Extend writes a hold until now + the link's duration, as nsman hold
	// --for does.
	Extend Action = "extend"
	// Wake writes a wake until now + the link's duration, as nsman wake
	// --for does.
	Wake Action = "wake"
)

const (
	// DefaultValidity is how long a link made by Offers may be used.
	DefaultValidity = 7 * 24 * time.Hour
	// MaxDuration bounds a link's duration: Verify refuses a longer one
	// whatever its signature, so that a key that leaked cannot make a
	// link that holds a namespace for a year (nsman serve's --max-hold
	// caps it further).
	MaxDuration = 31 * 24 * time.Hour
	// MaxKeyBytes bounds what ReadKey reads of a key file.
	MaxKeyBytes = 4096
	// Path is where a link points, below its base URL.
	Path = "/link"
)

// Link is what a signed link lets its holder do.
type Link struct {
	Namespace string
	UID       string
	Action    Action
	Duration  time.Duration
	Expires   time.Time
}

// Errors Verify returns, for a caller that says why a link was refused.
var (
	ErrMalformed = errors.New("the link is incomplete or malformed")
	ErrSignature = errors.New("the link's signature does not match: it was altered, or signed with another key")
	ErrExpired   = errors.New("the link has expired")
	ErrAction    = errors.New("the link names an action nsman does not know")
	ErrDuration  = errors.New("the link's duration is not one nsman makes")
)

// ReadKey reads the signing key from path as --webhook-signing-key-file
// is read: at most MaxKeyBytes, surrounding white space trimmed, refused
// when empty. No error quotes what the file holds.
func ReadKey(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxKeyBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxKeyBytes {
		return nil, fmt.Errorf("%s is longer than %d bytes", path, MaxKeyBytes)
	}
	key := []byte(strings.TrimSpace(string(data)))
	if len(key) == 0 {
		return nil, fmt.Errorf("%s is empty", path)
	}
	return key, nil
}

// Sign returns l as a token: its fields and their HMAC-SHA256 with key,
// each base64url-encoded, joined by a dot. A token needs no escaping in a
// URL's query, in HTML, or in any chat app's markup.
func Sign(key []byte, l Link) string {
	payload := encode(l)
	return base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(mac(key, payload))
}

// URL is the link to base (nsman serve's address, as --links-url gives it)
// that carries token.
func URL(base, token string) string {
	return strings.TrimSuffix(base, "/") + Path + "?t=" + token
}

// encode is what Sign signs of l: a version, then each field on a line of
// its own (no field nsman writes holds a line break; Verify signs back
// what it decodes, so one that did would not verify).
func encode(l Link) []byte {
	return []byte(strings.Join([]string{"nsman-link-v1", l.Namespace, l.UID, string(l.Action), strconv.FormatInt(int64(l.Duration/time.Second), 10), strconv.FormatInt(l.Expires.Unix(), 10)}, "\n"))
}

func mac(key, payload []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write(payload)
	return h.Sum(nil)
}

// MaxToken bounds a token Verify reads.
const MaxToken = 1024

// Verify returns the link that token carries if key signed it, it has not
// expired at now, its action is one nsman knows and its duration is
// positive and at most MaxDuration. The signature is compared in constant
// time, and checked before anything the link says is believed.
func Verify(key []byte, token string, now time.Time) (Link, error) {
	p64, s64, ok := strings.Cut(token, ".")
	if !ok || len(token) > MaxToken {
		return Link{}, ErrMalformed
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p64)
	sig, err2 := base64.RawURLEncoding.DecodeString(s64)
	if err1 != nil || err2 != nil {
		return Link{}, ErrMalformed
	}
	if !hmac.Equal(sig, mac(key, payload)) {
		return Link{}, ErrSignature
	}
	f := strings.Split(string(payload), "\n")
	if len(f) != 6 || f[0] != "nsman-link-v1" || f[1] == "" || f[2] == "" {
		return Link{}, ErrMalformed
	}
	secs, err1 := strconv.ParseInt(f[4], 10, 64)
	exp, err2 := strconv.ParseInt(f[5], 10, 64)
	if err1 != nil || err2 != nil {
		return Link{}, ErrMalformed
	}
	l := Link{Namespace: f[1], UID: f[2], Action: Action(f[3]), Duration: time.Duration(secs) * time.Second, Expires: time.Unix(exp, 0).UTC()}
	switch {
	case l.Action != Extend && l.Action != Wake:
		return Link{}, ErrAction
	case secs <= 0 || secs > int64(MaxDuration/time.Second):
		return Link{}, ErrDuration
	case !now.Before(l.Expires):
		return Link{}, ErrExpired
	}
	return l, nil
}

// Offer is one link a notification carries.
type Offer struct {
	Link Link
	URL  string
}

// Offers are the links a notification about namespace (of uid) carries,
// made at now: extend by a day, extend by a week, wake for 2 hours, each
// valid for DefaultValidity. A SLEEP's notification and a warning before
// an action carry the same.
func Offers(base string, key []byte, namespace, uid string, now time.Time) []Offer {
	expires := now.Add(DefaultValidity).UTC().Truncate(time.Second)
	var offers []Offer
	for _, o := range []struct {
		a Action
		d time.Duration
	}{{Extend, 24 * time.Hour}, {Extend, 7 * 24 * time.Hour}, {Wake, 2 * time.Hour}} {
		l := Link{Namespace: namespace, UID: uid, Action: o.a, Duration: o.d, Expires: expires}
		offers = append(offers, Offer{Link: l, URL: URL(base, Sign(key, l))})
	}
	return offers
}

// CheckBase reports whether base is fit to be --links-url: an absolute
// http or https URL with a host, and no query or fragment.
func CheckBase(base string) error {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return errors.New("want an absolute http or https URL with no query or fragment")
	}
	return nil
}

// FromFlags checks nsman sweep's --links-url (base) and reads its
// --links-signing-key-file: both, or neither (no links). No error shows
// the key.
func FromFlags(base, keyFile string) (string, []byte, error) {
	switch {
	case base == "" && keyFile == "":
		return "", nil, nil
	case base == "" || keyFile == "":
		return "", nil, errors.New("--links-url and --links-signing-key-file: give both, or neither")
	}
	if err := CheckBase(base); err != nil {
		return "", nil, fmt.Errorf("--links-url %s: %w", base, err)
	}
	key, err := ReadKey(keyFile)
	if err != nil {
		return "", nil, fmt.Errorf("--links-signing-key-file: %w", err)
	}
	return base, key, nil
}
