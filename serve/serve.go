package serve

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/links"
)

// Bounds of every request serve reads: a slow or endless client cannot
// hold it, nor make it read more than this.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 20 * time.Second
	idleTimeout       = 60 * time.Second
	maxHeaderBytes    = 16 << 10
	maxBody           = 4 << 10
	// writeWindow is how often one link may write; maxLinks how many
	// links the limiter keeps.
	writeWindow = time.Minute
	maxLinks    = 10000
	// apiTimeout bounds the reads and the write of an answer.
	apiTimeout = 10 * time.Second
)

// Config is what nsman serve runs with.
type Config struct {
	// Listen is the address to listen on (":8080").
	Listen string
	// KeyFile holds the key that signs links: nsman sweep's
	// --links-signing-key-file, read by New.
	KeyFile string
	key     []byte
	// BaseURL, when set, is nsman sweep's --links-url: a POST must come
	// from its origin. Empty: from the origin the request was sent to.
	BaseURL string
	// MaxHold refuses a link whose duration is longer: the sweep's
	// --max-hold, beyond which it ignores a hold.
	MaxHold time.Duration
	// UserHeader names the header a proxy in front (oauth2-proxy) sets to
	// the user, whom pages and logs name.
	UserHeader string
	Clients    cluster.Clients
	Log        *slog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Server answers links.
type Server struct {
	cfg     Config
	limit   *limiter
	answers *prometheus.CounterVec
	reg     *prometheus.Registry
}

// New returns a Server of cfg.
func New(cfg Config) (*Server, error) {
	var err error
	if cfg.key, err = links.ReadKey(cfg.KeyFile); err != nil {
		return nil, fmt.Errorf("--links-signing-key-file: %w", err)
	}
	if cfg.BaseURL != "" {
		if err := links.CheckBase(cfg.BaseURL); err != nil {
			return nil, fmt.Errorf("--links-url: %w", err)
		}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, limit: newLimiter(writeWindow, maxLinks), reg: prometheus.NewRegistry()}
	s.answers = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nsman_serve_answers_total", Help: "Answers of nsman serve to links, by method and result."}, []string{"method", "result"})
	s.reg.MustRegister(s.answers, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return s, nil
}

// Handler routes /link, /healthz and /metrics.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+links.Path, s.get)
	mux.HandleFunc("POST "+links.Path, s.post)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	return mux
}

// Run serves cfg on cfg.Listen until ctx is done (SIGTERM), then lets the
// answers under way finish, for at most 10 seconds. It logs with what
// logger makes, and reaches the cluster through what clients returns
// (cmd's flags for both).
func Run(ctx context.Context, cfg Config, logger func() (*slog.Logger, error), clients func() (cluster.Clients, error)) (err error) {
	if cfg.Log, err = logger(); err != nil {
		return err
	}
	if cfg.Clients, err = clients(); err != nil {
		return err
	}
	s, err := New(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	return s.Serve(ctx, ln)
}

// Serve is Run on ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout,
		WriteTimeout: writeTimeout, IdleTimeout: idleTimeout, MaxHeaderBytes: maxHeaderBytes,
		ErrorLog: slog.NewLogLogger(s.cfg.Log.Handler(), slog.LevelWarn), BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) }}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	s.cfg.Log.Info("serving links", "address", ln.Addr().String())
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	return nil
}

// formToken is the token a page's form carries beside the link's: derived
// from the link with the key, so that a POST names a page serve rendered
// for that very link.
func (s *Server) formToken(token string) string {
	h := hmac.New(sha256.New, s.cfg.key)
	h.Write([]byte("nsman-serve-form\n" + token))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// sameOrigin reports whether a POST comes from a page of serve's: its
// Origin, else its Referer, names the origin of BaseURL (or, without one,
// the host the request was sent to). A request with neither is refused:
// every browser sends Origin with a form's POST.
func (s *Server) sameOrigin(r *http.Request) bool {
	from := r.Header.Get("Origin")
	if from == "" || from == "null" {
		from = r.Header.Get("Referer")
	}
	u, err := url.Parse(from)
	if from == "" || err != nil || u.Host == "" {
		return false
	}
	if s.cfg.BaseURL != "" {
		base, _ := url.Parse(s.cfg.BaseURL)
		return strings.EqualFold(u.Scheme, base.Scheme) && strings.EqualFold(u.Host, base.Host)
	}
	return strings.EqualFold(u.Host, r.Host)
}

// user is who asked, as the proxy in front says ("" without UserHeader).
func (s *Server) user(r *http.Request) string {
	if s.cfg.UserHeader == "" {
		return ""
	}
	u := r.Header.Get(s.cfg.UserHeader)
	if len(u) > 256 {
		u = u[:256]
	}
	return u
}

// answer counts and logs an answer: the namespace, action, result and user.
func (s *Server) answer(r *http.Request, l links.Link, result string) {
	s.answers.WithLabelValues(r.Method, result).Inc()
	s.cfg.Log.Info("answered a link", "method", r.Method, "namespace", l.Namespace, "action", string(l.Action), "duration", l.Duration.String(), "result", result, "user", s.user(r))
}
