package tell

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/nsman/nsman/webhook"
)

// Channel is one of the platform's notification channels
// (--notify-channel NAME=FILE): a tenant picks it by name with
// policy.NotifyChannelAnnotation, never by URL, so that no tenant can send
// nsman's notifications (or have them signed) to a receiver of its own.
type Channel struct {
	// Name is a DNS label, what the annotation names.
	Name string
	// URL is a credential, as Config.NotifyURL is: never shown whole.
	URL string
	// Format is one of FormatNames; empty: the default's.
	Format string
}

// maxURLFile bounds what is read of a file that holds a notification URL:
// an incoming-webhook URL is some hundred bytes.
const maxURLFile = 8 << 10

// ReadURLFile reads the notification URL in file path (once, at start;
// surrounding white space trimmed), for flag: at most maxURLFile bytes,
// an absolute http or https URL on one line. No error shows any of what
// the file holds: the URL is a credential.
func ReadURLFile(flag, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", flag, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxURLFile+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("%s: %w", flag, err)
	case len(data) > maxURLFile:
		return "", fmt.Errorf("%s %s holds more than %d bytes: want one URL (its content is not shown)", flag, path, maxURLFile)
	}
	rawURL := strings.TrimSpace(string(data))
	switch {
	case rawURL == "":
		return "", fmt.Errorf("%s %s is empty", flag, path)
	case strings.ContainsAny(rawURL, "\r\n") || !Notifiable(rawURL):
		return "", fmt.Errorf("%s %s: want an absolute http or https URL on one line (its content is not shown)", flag, path)
	}
	return rawURL, nil
}

// Notifiable reports whether rawURL is an absolute http or https URL with
// a host, as webhook.Sender takes.
func Notifiable(rawURL string) bool {
	u, err := url.Parse(rawURL)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Hostname() != ""
}

// ParseChannelFlag splits a NAME=VALUE of --notify-channel or
// --notify-channel-format (flag), NAME a DNS label.
func ParseChannelFlag(flag, arg string) (name, value string, err error) {
	name, value, ok := strings.Cut(arg, "=")
	switch {
	case !ok || value == "":
		return "", "", fmt.Errorf("%s %q: want NAME=VALUE", flag, arg)
	case len(validation.IsDNS1123Label(name)) > 0:
		return "", "", fmt.Errorf("%s %q: the name must be a DNS label (lower-case letters, digits and '-', at most 63)", flag, arg)
	}
	return name, value, nil
}

// ValidateNotify reports a --notify-format (empty: DefaultFormat) that no
// Format has, and channels that cannot run (ValidateChannels).
func ValidateNotify(format string, channels []Channel) error {
	if format != "" {
		if _, err := LookupFormat(format); err != nil {
			return err
		}
	}
	return ValidateChannels(channels)
}

// ValidateChannels reports channels that cannot run: a name given twice
// or not a DNS label, a URL that is not notifiable (shown redacted), a
// format no Format has.
func ValidateChannels(channels []Channel) error {
	seen := map[string]bool{}
	var errs []error
	for _, c := range channels {
		switch {
		case len(validation.IsDNS1123Label(c.Name)) > 0:
			errs = append(errs, fmt.Errorf("--notify-channel %q: the name must be a DNS label", c.Name))
		case seen[c.Name]:
			errs = append(errs, fmt.Errorf("--notify-channel %s is given twice", c.Name))
		case !Notifiable(c.URL):
			errs = append(errs, fmt.Errorf("--notify-channel %s: %s is not an absolute http or https URL", c.Name, RedactURL(c.URL)))
		case c.Format != "":
			if _, err := LookupFormat(c.Format); err != nil {
				errs = append(errs, fmt.Errorf("--notify-channel-format %s: %w", c.Name, err))
			}
		}
		seen[c.Name] = true
	}
	return errors.Join(errs...)
}

// WithChannels returns n with channels besides its default, each sent to
// in its format (n's when it has none) through sender, the default's: its
// timeout, retries, address policy and signature are the default's, and
// as its silent receivers are kept per receiver, one channel that falls
// silent defers the sends to it alone. A nil n (no default URL) gets an
// empty default, which sends nothing: the channels still do.
func (n *Notifier) WithChannels(channels []Channel, sender *webhook.Sender) *Notifier {
	if len(channels) == 0 {
		return n
	}
	if n == nil {
		n = &Notifier{format: formats[0]}
	}
	c := *n
	c.channels = make(map[string]*Notifier, len(channels))
	for _, ch := range channels {
		format := ch.Format
		if format == "" {
			format = c.format.Name()
		}
		c.channels[ch.Name] = NewNotifier(ch.URL, format, sender)
	}
	return &c
}

// Route is the notifier of a notification about a namespace annotated
// with channel namespaceChannel, by a manager annotated with
// managerChannel (for a rule, the rule's: its namespaces' default): the
// namespace's channel, else the manager's, else the default. A name no
// channel has is sent to the default, and unknown says so, for the
// report's warnings and an Event; the name is the tenant's, so it is
// quoted, bounded. to is nil when nothing is to be sent: no default, and
// no channel picked.
func (n *Notifier) Route(namespaceChannel, managerChannel string) (to *Notifier, unknown string) {
	if n == nil {
		return nil, ""
	}
	name := namespaceChannel
	if name == "" {
		name = managerChannel
	}
	if c, ok := n.channels[name]; ok && name != "" {
		return c, ""
	}
	to, fallback := n, "notified on the default channel"
	if !n.sends() {
		to, fallback = nil, "not notified: there is no default channel"
	}
	if name != "" {
		unknown = ChannelUnknownPrefix + fmt.Sprintf("%q is not one of the platform's (--notify-channel): %s", cutName(name), fallback)
	}
	return to, unknown
}

// ChannelUnknownPrefix begins the warning of Route for a channel no
// --notify-channel names: the Event NotifyChannelUnknown tells such
// warnings, Incomplete the others.
const ChannelUnknownPrefix = "notify channel "

// NotifyChannelUnknown is the reason of the Warning Event of a
// notification sent to the default channel for want of the one named.
const NotifyChannelUnknown = "NotifyChannelUnknown"

// cutName bounds a channel name a tenant wrote, for a warning: a DNS label
// is at most 63 bytes.
func cutName(name string) string {
	if len(name) > 64 {
		return name[:64] + "…"
	}
	return name
}

// sends reports whether n sends anything: a default URL. A notifier with
// channels alone sends only what is routed to one of them.
func (n *Notifier) sends() bool { return n != nil && n.url != "" }

// ParseChannels reads the channels of --notify-channel NAME=FILE (each
// file with ReadURLFile) and their formats, --notify-channel-format
// NAME=FORMAT, which must each name a channel given.
func ParseChannels(channelFlags, formatFlags []string) ([]Channel, error) {
	channels := make([]Channel, 0, len(channelFlags))
	for _, arg := range channelFlags {
		name, file, err := ParseChannelFlag("--notify-channel", arg)
		if err != nil {
			return nil, err
		}
		rawURL, err := ReadURLFile("--notify-channel "+name, file)
		if err != nil {
			return nil, err
		}
		channels = append(channels, Channel{Name: name, URL: rawURL})
	}
	for _, arg := range formatFlags {
		name, format, err := ParseChannelFlag("--notify-channel-format", arg)
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(channels, func(c Channel) bool { return c.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("--notify-channel-format %s: no --notify-channel %s=FILE is given", name, name)
		}
		channels[i].Format = format
	}
	return channels, ValidateChannels(channels)
}
