package tell

import (
	"fmt"
	"slices"
	"strings"
)

// Format is one way of writing a Notification for its receiver
// (--notify-format), one home each (format_*.go), registered once in
// formats: the flag's help, its completion, its validation and the docs
// read them from there, so that adding one touches its home, formats,
// the docs and the tests, and no switch elsewhere.
type Format interface {
	// Name is how --notify-format names it.
	Name() string
	// Help says in a few words what it sends and who accepts it, for
	// --notify-format's help and the docs.
	Help() string
	// Body is the request body that tells n. Whatever a tenant wrote (the
	// names, the message, the effects) is escaped for the receiver, or, in
	// json, left for the receiver to render.
	Body(n Notification) ([]byte, error)
}

// formats are the registered formats, in the order --notify-format's help,
// its completion and the docs list them; the first is the default.
var formats = []Format{jsonFormat{}, slackFormat{}, teamsFormat{}, googleChatFormat{}}

// DefaultFormat is the format of a Notifier given none.
var DefaultFormat = formats[0].Name()

// FormatNames are the registered formats' names, in order.
func FormatNames() []string {
	names := make([]string, 0, len(formats))
	for _, f := range formats {
		names = append(names, f.Name())
	}
	return names
}

// LookupFormat returns the format called name, or an error that lists the
// formats there are.
func LookupFormat(name string) (Format, error) {
	i := slices.IndexFunc(formats, func(f Format) bool { return f.Name() == name })
	if i < 0 {
		return nil, fmt.Errorf("--notify-format must be one of %s, not %q", strings.Join(FormatNames(), ", "), name)
	}
	return formats[i], nil
}

// FormatHelp is --notify-format's help: each format with its Help.
func FormatHelp() string {
	parts := make([]string, 0, len(formats))
	for _, f := range formats {
		parts = append(parts, f.Name()+" ("+f.Help()+")")
	}
	last := len(parts) - 1
	if last > 0 {
		parts[last] = "or " + parts[last]
	}
	return "notification body: " + strings.Join(parts, ", ")
}

// notificationBody renders n in the format called name; a name no format
// has (none was given) renders it in DefaultFormat, as before formats were
// registered.
func notificationBody(n Notification, name string) ([]byte, error) {
	f, err := LookupFormat(name)
	if err != nil {
		f = formats[0]
	}
	return f.Body(n)
}
