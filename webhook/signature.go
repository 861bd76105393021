package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The headers a receiver reads. The signature headers are set only when the
// Sender has a signing key.
const (
	// IdempotencyKeyHeader is the same on every attempt and every sweep that
	// delivers one firing, so that a receiver can drop duplicates.
	IdempotencyKeyHeader = "Idempotency-Key"
	// TimestampHeader holds the Unix seconds at which the attempt was signed.
	TimestampHeader = "X-Nsman-Timestamp"
	// SignatureHeader holds "sha256=" and the lower-case hex HMAC-SHA256 of
	// the timestamp, a dot and the body.
	SignatureHeader = "X-Nsman-Signature"

	signaturePrefix = "sha256="
)

// signature is the SignatureHeader value: HMAC-SHA256 over the timestamp, a
// dot and the body, so that neither can be replaced alone.
func signature(key []byte, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(timestamp))
	mac.Write([]byte("."))
	mac.Write(body)
	return signaturePrefix + hex.EncodeToString(mac.Sum(nil))
}

// VerifySignature is what a receiver does with a signed request: it checks
// that the X-Nsman-Signature header is the HMAC-SHA256 of X-Nsman-Timestamp,
// a dot and body under key, and that the timestamp is within maxAge of now
// (either way, to bound both replays and clock skew).
func VerifySignature(header http.Header, body, key []byte, now time.Time, maxAge time.Duration) error {
	if len(key) == 0 {
		return errors.New("verify webhook signature: empty key")
	}
	if maxAge <= 0 {
		return fmt.Errorf("verify webhook signature: maxAge %s is not positive", maxAge)
	}
	ts, sig := header.Get(TimestampHeader), header.Get(SignatureHeader)
	if ts == "" || sig == "" {
		return fmt.Errorf("verify webhook signature: missing %s or %s header", TimestampHeader, SignatureHeader)
	}
	if !strings.HasPrefix(sig, signaturePrefix) ||
		!hmac.Equal([]byte(sig), []byte(signature(key, ts, body))) {
		return errors.New("verify webhook signature: signature does not match")
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("verify webhook signature: timestamp: %w", err)
	}
	if age := now.Sub(time.Unix(secs, 0)); age > maxAge || age < -maxAge {
		return fmt.Errorf("verify webhook signature: timestamp %s is %s away from %s, more than %s",
			ts, age.Abs().Truncate(time.Second), now.UTC().Format(time.RFC3339), maxAge)
	}
	return nil
}
