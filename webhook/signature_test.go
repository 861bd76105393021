package webhook

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestVerifySignature(t *testing.T) {
	key := []byte("s3cret")
	body := []byte(`{"namespace":"e2e"}`)

	// What the receiver gets from a real Send.
	rc := &testReceiver{statuses: []int{200}}
	srv := startReceiver(t, rc)
	s := NewSender(testOptions(func(o *Options) { o.SigningKey = key }))
	if _, err := s.Send(t.Context(), srv.URL, body, "k"); err != nil {
		t.Fatal(err)
	}
	signed := rc.recorded()[0].header
	secs, err := strconv.ParseInt(signed.Get("X-Nsman-Timestamp"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	sent := time.Unix(secs, 0)
	with := func(name, value string) http.Header {
		h := signed.Clone()
		if value == "" {
			h.Del(name)
		} else {
			h.Set(name, value)
		}
		return h
	}
	sig := signed.Get("X-Nsman-Signature")

	tests := []struct {
		name    string
		header  http.Header
		body    []byte
		key     []byte
		now     time.Time
		maxAge  time.Duration
		wantErr bool
	}{
		{name: "as sent", header: signed, body: body, key: key, now: sent, maxAge: 5 * time.Minute},
		{name: "received within maxAge", header: signed, body: body, key: key, now: sent.Add(5 * time.Minute), maxAge: 5 * time.Minute},
		{name: "modified body", header: signed, body: []byte(`{"namespace":"prod"}`), key: key, now: sent, maxAge: 5 * time.Minute, wantErr: true},
		{name: "wrong key", header: signed, body: body, key: []byte("guess"), now: sent, maxAge: 5 * time.Minute, wantErr: true},
		{name: "empty key", header: signed, body: body, key: nil, now: sent, maxAge: 5 * time.Minute, wantErr: true},
		{name: "stale timestamp", header: signed, body: body, key: key, now: sent.Add(5*time.Minute + time.Second), maxAge: 5 * time.Minute, wantErr: true},
		{name: "timestamp from the future", header: signed, body: body, key: key, now: sent.Add(-6 * time.Minute), maxAge: 5 * time.Minute, wantErr: true},
		{name: "timestamp replaced", header: with("X-Nsman-Timestamp", fmt.Sprint(sent.Unix()+1)), body: body, key: key, now: sent, maxAge: 5 * time.Minute, wantErr: true},
		{name: "no timestamp", header: with("X-Nsman-Timestamp", ""), body: body, key: key, now: sent, maxAge: 5 * time.Minute, wantErr: true},
		{name: "no signature", header: with("X-Nsman-Signature", ""), body: body, key: key, now: sent, maxAge: 5 * time.Minute, wantErr: true},
		{name: "other algorithm", header: with("X-Nsman-Signature", "sha1="+strings.TrimPrefix(sig, "sha256=")), body: body, key: key, now: sent, maxAge: 5 * time.Minute, wantErr: true},
		{name: "uppercase hex", header: with("X-Nsman-Signature", "sha256="+strings.ToUpper(strings.TrimPrefix(sig, "sha256="))), body: body, key: key, now: sent, maxAge: 5 * time.Minute, wantErr: true},
		{name: "zero maxAge", header: signed, body: body, key: key, now: sent, maxAge: 0, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifySignature(tt.header, tt.body, tt.key, tt.now, tt.maxAge)
			if (err != nil) != tt.wantErr {
				t.Errorf("VerifySignature = %v, want error: %v", err, tt.wantErr)
			}
		})
	}
}
