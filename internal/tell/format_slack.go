package tell

import (
	"encoding/json"
	"strings"
	"unicode"
)

// NotifySlack names the slack format: a {"text": ...} body.
const NotifySlack = "slack"

// slackFormat sends a {"text": ...} body that Slack and Mattermost incoming
// webhooks accept: chatParts' sentence, the message, a line per effect and
// what was reclaimed. In the text, whatever nsman did not write itself
// (names, the message, the effects) is escaped (see markupEscape), so that
// nobody who names a manager, annotates a namespace or answers a webhook
// can ping a channel, show an image or hide a link in it; and the value of
// an annotation the message says was ignored is left out. A webhook's
// failure carries its status code alone: the webhook package never quotes
// a reason phrase.
type slackFormat struct{}

func (slackFormat) Name() string { return NotifySlack }

func (slackFormat) Help() string {
	return `a {"text": ...} body that Slack and Mattermost incoming webhooks accept`
}

func (slackFormat) Body(n Notification) ([]byte, error) {
	p := chatPartsOf(n, markupEscape)
	text := p.Sentence
	if p.Message != "" {
		text += ": " + p.Message
	}
	for _, e := range p.Effects {
		text += "\n" + e
	}
	if p.Reclaimed != "" {
		text += "\nreclaimed: " + p.Reclaimed
	}
	// A link is <url|label>: a token needs no escape, and nsman's
	// base URL none but Slack's three characters.
	for _, l := range p.Links {
		text += "\n<" + slackURL(l.URL) + "|" + linkLabel(l) + ">"
	}
	return json.Marshal(map[string]string{"text": text})
}

// markupEscape escapes s, which nsman did not write, for a Slack or
// Mattermost message:
//   - &, < and > as Slack asks (&amp;, &lt;, &gt;): no <!channel>, no
//     <url|text> link;
//   - a backslash before each \, `, *, ~, [ and ], and before each _ that
//     is not inside a word, which Markdown (Mattermost) reads as such
//     characters: no link or image ([text](url), ![x](url)), no code,
//     emphasis or strike-through (Slack shows the backslashes);
//   - a zero-width space after each @, which Mattermost would read as a
//     mention (@channel, @here, @all, @someone), and after each ":" of a
//     "://", so that no URL becomes a link or a preview;
//   - a space for each control or format character (line breaks, bidi
//     overrides): no line of its own (a heading, a list, a quote), and no
//     text shown in another order than written.
func markupEscape(s string) string {
	runes := []rune(s)
	var b strings.Builder
	b.Grow(len(s))
	word := func(i int) bool {
		return i >= 0 && i < len(runes) && (unicode.IsLetter(runes[i]) || unicode.IsDigit(runes[i]))
	}
	for i, c := range runes {
		switch {
		case c == '&':
			b.WriteString("&amp;")
		case c == '<':
			b.WriteString("&lt;")
		case c == '>':
			b.WriteString("&gt;")
		case c == '@':
			b.WriteString("@\u200b")
		case c == ':' && strings.HasPrefix(string(runes[i+1:min(i+3, len(runes))]), "//"):
			b.WriteString(":\u200b")
		case c == '.' && word(i-1) && word(i+1):
			// Slack links a bare domain, Mattermost www.: no host of a
			// tenant's becomes one.
			b.WriteString(".\u200b")
		case strings.ContainsRune("\\`*~[]", c), c == '_' && !(word(i-1) && word(i+1)):
			b.WriteByte('\\')
			b.WriteRune(c)
		case unicode.In(c, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp):
			b.WriteByte(' ')
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// slackURL escapes, in a URL of nsman's, what Slack asks escaped.
func slackURL(u string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "|", "%7C").Replace(u)
}
