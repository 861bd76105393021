// Package tell says what a sweep did to the people who watch it: Events on
// managers and rules (on a rule at most three per sweep, whatever the
// number of its namespaces), and the notifications of --notify-url, whose
// URL, a credential, no error or log shows. A notification's format is one
// home each behind Format (format_json.go, format_slack.go, format_teams.go,
// format_googlechat.go), registered once in format.go; the chat formats
// word a notification once (chat.go) and escape the words tenants wrote
// each for its receiver. The platform's other channels (--notify-channel),
// which a namespace or manager picks by name, and their routing are
// channels.go's.
package tell
