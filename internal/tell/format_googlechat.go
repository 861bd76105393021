package tell

import (
	"strings"
	"unicode/utf16"
)

// NotifyGoogleChat names the googlechat format: a {"text": ...} body for a
// Google Chat incoming webhook.
const NotifyGoogleChat = "googlechat"

// googleChatMaxText is the longest text Google Chat posts, in characters
// (counted here as UTF-16 units, never fewer than characters).
const googleChatMaxText = 4096

// googleChatCutNote ends a text cut to googleChatMaxText.
const googleChatCutNote = "\n… (cut: longer than Google Chat's 4,096 characters)"

// googleChatFormat sends a {"text": ...} body that a Google Chat space's
// incoming webhook posts: chatParts' sentence in bold, when it was done
// (in UTC: a text cannot say it in the reader's time zone), the message, a
// line per effect and what was reclaimed. What a tenant wrote is escaped by
// lookalikeEscape: Google Chat's text markup (*bold*, _italic_, ~strike~,
// `code`, <url|text> links, <users/all> mentions) documents no escape. A
// text over googleChatMaxText is cut, and says so.
type googleChatFormat struct{}

func (googleChatFormat) Name() string { return NotifyGoogleChat }

func (googleChatFormat) Help() string {
	return `a {"text": ...} body for a Google Chat incoming webhook`
}

func (googleChatFormat) Body(n Notification) ([]byte, error) {
	p := chatPartsOf(n, lookalikeEscape)
	text := "*" + p.Sentence + "*"
	if !n.Time.IsZero() {
		text += " at " + readerTime(n.Time)
	}
	if p.Message != "" {
		text += ": " + p.Message
	}
	for _, e := range p.Effects {
		text += "\n" + e
	}
	if p.Reclaimed != "" {
		text += "\nreclaimed: " + p.Reclaimed
	}
	// The links, <url|label> each, are kept whole by a cut: the text
	// before them gives way.
	links := ""
	for _, l := range p.Links {
		links += "\n<" + slackURL(l.URL) + "|" + linkLabel(l) + ">"
	}
	return marshalUnescaped(map[string]string{"text": cutUTF16(text, googleChatMaxText-len(utf16.Encode([]rune(links))), googleChatCutNote) + links})
}

// cutUTF16 is s if it is at most limit UTF-16 units long, else as much of
// s as leaves room for note, then note.
func cutUTF16(s string, limit int, note string) string {
	if len(utf16.Encode([]rune(s))) <= limit {
		return s
	}
	room := limit - len(utf16.Encode([]rune(note)))
	var b strings.Builder
	for _, r := range s {
		if room -= utf16.RuneLen(r); room < 0 {
			break
		}
		b.WriteRune(r)
	}
	return b.String() + note
}
