package sweep

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/execute"
	"github.com/nsman/nsman/internal/tell"
	"github.com/nsman/nsman/internal/tell/telltest"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/webhook"
)

// notifyOnce makes a Sweeper that notifies rawURL with sender, logging to
// a buffer, and has it tell of a failed WEBHOOK action.
func notifyOnce(t *testing.T, cfg Config, sender *webhook.Sender) (logs string, x *execute.Executor) {
	t.Helper()
	var buf bytes.Buffer
	s, err := New(cfg, cluster.Clients{}, sender, slog.New(slog.NewJSONHandler(&buf, nil)))
	if err != nil {
		t.Fatal(err)
	}
	x = &execute.Executor{Notifier: s.notifier, Log: s.log, Now: time.Now(), SweepID: s.cfg.SweepID, Version: s.cfg.Version}
	m := policy.Manager{Namespace: "team-a", Name: "preview", UID: "uid-1", Generation: 1}
	p := &decide.Plan{Policy: policy.Policy{Name: "report", Action: policy.Action{Type: policy.ActionWebhook, URL: "http://hook.team-a.svc/x"}}, Target: decide.Target{Name: "preview"}}
	x.Notify(t.Context(), m, p, nil, nil, errors.New("webhook http://hook.team-a.svc: HTTP 500 after 3 attempts"), false)
	return buf.String(), x
}

// TestNotifyLogsNoURLSecret: a notification that fails is logged with the
// URL's scheme and host, never its path, query or user, whatever the
// failure.
func TestNotifyLogsNoURLSecret(t *testing.T) {
	refusing := func(t *testing.T) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		_ = l.Close()
		return addr
	}
	for _, tt := range []struct {
		name string
		host func(t *testing.T) string
	}{
		{"status", func(t *testing.T) string {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) }))
			t.Cleanup(srv.Close)
			return strings.TrimPrefix(srv.URL, "http://")
		}},
		{"reason phrase", func(t *testing.T) string {
			return strings.TrimPrefix(telltest.Answering(t, "HTTP/1.1 400 "+telltest.Evil), "http://")
		}},
		{"connection refused", refusing},
		{"refused by the allow list", func(*testing.T) string { return "10.255.255.1:9" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			host := tt.host(t)
			allow, err := webhook.ParseAllowList([]string{"127.0.0.1/32"})
			if err != nil {
				t.Fatal(err)
			}
			sender := webhook.NewSender(webhook.Options{MaxAttempts: 1, Timeout: 5 * time.Second, Allow: allow})
			logs, x := notifyOnce(t, Config{NotifyURL: notifyURL(host), NotifyFormat: tell.NotifySlack}, sender)
			if x.Counts.NotifyFailed.Load() != 1 || x.Counts.NotifySent.Load() != 0 {
				t.Errorf("%d failed, %d sent, want 1 failed", x.Counts.NotifyFailed.Load(), x.Counts.NotifySent.Load())
			}
			if !strings.Contains(logs, "notification not delivered") || !strings.Contains(logs, "http://"+host) {
				t.Errorf("logs name neither the failure nor the receiver http://%s:\n%s", host, logs)
			}
			for _, s := range secrets {
				if strings.Contains(logs, s) {
					t.Errorf("logs show %s:\n%s", s, logs)
				}
			}
		})
	}
}

// TestNotificationSigningKey: notifications are signed with
// Config.NotifySigningKey when it is set, WEBHOOK actions' key
// otherwise; a dry run has no notifier.
func TestNotificationSigningKey(t *testing.T) {
	webhookKey, notifyKey := []byte("webhook-key"), []byte("notify-key")
	for _, tt := range []struct {
		name      string
		configKey []byte
		verifyKey []byte
	}{
		{"own key", notifyKey, notifyKey},
		{"webhook key", nil, webhookKey},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := make(chan error, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				got <- signedWith(r, body, tt.verifyKey)
			}))
			defer srv.Close()
			sender := webhook.NewSender(webhook.Options{MaxAttempts: 1, SigningKey: webhookKey})
			logs, x := notifyOnce(t, Config{NotifyURL: srv.URL + "/nsman", NotifySigningKey: tt.configKey}, sender)
			if x.Counts.NotifySent.Load() != 1 {
				t.Fatalf("notification not sent:\n%s", logs)
			}
			if err := <-got; err != nil {
				t.Errorf("signature under the %s: %v", tt.name, err)
			}
		})
	}

	s, err := New(Config{DryRun: true, NotifyURL: "https://hooks.example.com/x", NotifySigningKey: notifyKey}, cluster.Clients{}, nil, slog.New(slog.DiscardHandler))
	if err != nil || s.notifier != nil {
		t.Errorf("dry run: notifier %v, error %v; want none", s.notifier, err)
	}
	if _, err := New(Config{NotifyURL: "https://hooks.example.com/x"}, cluster.Clients{}, nil, slog.New(slog.DiscardHandler)); err == nil {
		t.Error("notifications without a sender accepted")
	}
}

// signedWith checks r's version 1 signature (webhook.SignatureHeader: the
// HMAC-SHA256 of the timestamp, a dot and the body), which every 1.x
// release sends.
func signedWith(r *http.Request, body, key []byte) error {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(r.Header.Get(webhook.TimestampHeader) + "."))
	mac.Write(body)
	if got, want := r.Header.Get(webhook.SignatureHeader), "sha256="+hex.EncodeToString(mac.Sum(nil)); got != want {
		return fmt.Errorf("signature %q, want %q", got, want)
	}
	return nil
}

// secrets are the parts of notifyURL that no log may show.
var secrets = []string{"T0SECRET", "B0SECRET", "XXSECRET", "QSECRET", "PWSECRET", "USERSECRET"}

// notifyURL is a notification URL to host whose every part but scheme and
// host is secret.
func notifyURL(host string) string {
	return "http://USERSECRET:PWSECRET@" + host + "/services/T0SECRET/B0SECRET/XXSECRET?token=QSECRET"
}
