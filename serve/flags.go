package serve

import (
	"github.com/spf13/pflag"

	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/duration"
)

// The help of nsman serve, which cmd shows: cmd only wires the command.
const (
	Use   = "serve --listen ADDR --links-signing-key-file FILE"
	Short = "Answer the signed links of notifications: a page on GET, the hold or wake on the page's POST"
	Long  = `Serves the links nsman sweep --links-url puts in notifications. A GET shows
what the link does and writes nothing; the page's button POSTs, and serve
writes what nsman hold --for or nsman wake --for writes, on the namespace
the link was made for (its UID), at most once per link and minute. It
serves /healthz and /metrics too. See docs/notifications.md.`
	Example = `  nsman serve --listen :8080 --links-signing-key-file /etc/nsman/links/key --links-url https://nsman.example.com --user-header X-Forwarded-Email`
)

// AddFlags binds nsman serve's own flags to c.
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.Listen, "listen", ":8080", "the address to serve on")
	fs.StringVar(&c.KeyFile, "links-signing-key-file", "", "file with the key that signs links: nsman sweep's (required)")
	fs.StringVar(&c.BaseURL, "links-url", "", "nsman sweep's --links-url: a POST must come from its origin (default: from the host the request names)")
	fs.StringVar(&c.UserHeader, "user-header", "", "the header naming the user, set by a proxy in front (e.g. X-Forwarded-Email from oauth2-proxy), which pages and logs show")
	c.MaxHold = decide.DefaultMaxHold // the sweep's
	fs.Var((*duration.Value)(&c.MaxHold), "max-hold", "refuse a link for longer than this: the sweep's --max-hold")
}
