package tell

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// chatParts is what a chat format (slack, teams, googlechat) says of a
// notification, worded once for all of them, with what a tenant wrote
// already passed through the format's escape: each format only lays the
// parts out in its receiver's shape. An event other than an action's
// outcome (a warning before one) adds its words here, not in each format.
type chatParts struct {
	// Sentence is the whole outcome in one line: "nsman: DELETE of
	// namespace preview-1 by manager team-a/preview (policy "ttl")
	// succeeded".
	Sentence string
	// Action ("SLEEP (wake)"), Target, Kind ("manager" or "rule"),
	// Subject (its namespace/name), Policy (quoted) and Result are the
	// sentence's parts, for a format that shows them as facts.
	Action, Target, Kind, Subject, Policy, Result string
	// Message is the notification's message, the values of ignored
	// annotations left out; Effects one entry per effect; Reclaimed what
	// was freed, "" for nothing told.
	Message   string
	Effects   []string
	Reclaimed string
	// Links are the notification's signed links (nsman's own URLs, not
	// escaped: no tenant wrote them), each with its label.
	Links []Link
}

// chatPartsOf words n, escaping with esc whatever nsman did not write
// itself.
func chatPartsOf(n Notification, esc func(string) string) chatParts {
	p := chatParts{Kind: "manager", Action: n.Action, Result: n.Result}
	if n.Rule {
		p.Kind = "rule"
	}
	if n.Woke {
		p.Action += " (wake)"
	}
	p.Action, p.Target, p.Policy = esc(p.Action), esc(n.Target), esc(strconv.Quote(n.Policy))
	p.Subject = esc(n.Manager.Namespace) + "/" + esc(n.Manager.Name)
	p.Sentence = fmt.Sprintf("nsman: %s of namespace %s by %s %s (policy %s) %s", p.Action, p.Target, p.Kind, p.Subject, p.Policy, p.Result)
	if n.Event == EventDueSoon && n.Due != nil {
		p.Result = "due " + DueIn(*n.Due, n.Time)
		p.Sentence = fmt.Sprintf("nsman: %s %s will %s namespace %s %s (policy %s)", p.Kind, p.Subject, p.Action, p.Target, DueIn(*n.Due, n.Time), p.Policy)
	}
	if n.Message != "" {
		p.Message = esc(withoutAnnotationValues(n.Message))
	}
	for _, e := range n.Effects {
		p.Effects = append(p.Effects, esc(e))
	}
	if n.Reclaimed != nil {
		p.Reclaimed = n.Reclaimed.String()
	}
	p.Links = n.Links
	return p
}

// readerTime is t as a reader anywhere reads it: to the minute, in UTC,
// saying so.
func readerTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

// DueIn says when due comes, seen at now, in the reader's terms: "in 2
// hours (2026-12-03 14:00 UTC)", "in 45 minutes (…)", "in 3 days (…)", or
// for a time past "2 hours ago (…)"; within half a minute "now (…)". It
// counts minutes up to an hour, hours up to two days, then days, each
// rounded to the nearest; the time in parentheses is exact to the minute.
//
// It is how every format says the due time of a warning before an action
// (a dueSoon event).
func DueIn(due, now time.Time) string {
	d := due.Sub(now)
	if d > -30*time.Second && d < 30*time.Second {
		return "now (" + readerTime(due) + ")"
	}
	span := d.Abs()
	count, unit := int(span.Round(time.Minute)/time.Minute), "minute"
	if count >= 60 {
		count, unit = int(span.Round(time.Hour)/time.Hour), "hour"
	}
	if count >= 48 && unit == "hour" {
		count, unit = int(span.Round(24*time.Hour)/(24*time.Hour)), "day"
	}
	if count != 1 {
		unit += "s"
	}
	if d < 0 {
		return fmt.Sprintf("%d %s ago (%s)", count, unit, readerTime(due))
	}
	return fmt.Sprintf("in %d %s (%s)", count, unit, readerTime(due))
}

// lookalikes are the characters that Google Chat's text markup or the
// Markdown of a Teams Adaptive Card reads as markup, each with a character
// that looks like it and that neither reads: neither documents a way to
// escape its markup (a backslash is shown, or not, depending on the
// client), so what a tenant wrote keeps its look without its effect.
var lookalikes = map[rune]rune{
	'*': '∗',           // U+2217 asterisk operator: no bold, emphasis or list
	'~': '∼',           // U+223C tilde operator: no strike-through
	'`': 'ˋ',           // U+02CB modifier letter grave accent: no code
	'[': '［', ']': '］', // fullwidth brackets: no [text](url) link or image
	'<': '‹', '>': '›', // single angle quotation marks: no <url|text>, <users/all>, <at>, HTML or quote
}

// lookalikeEscape escapes s, which nsman did not write, for a Google Chat
// text or a Teams Adaptive Card's TextBlock or Fact, as markupEscape does
// for Slack:
//   - each character of lookalikes as its look-alike, and an _ that is not
//     inside a word as a fullwidth low line (no italics);
//   - a zero-width space after each @ (no mention a client might read), after
//     the : of each "://" and after each . inside a word (no URL or domain
//     becomes a link or a preview), after an & before a letter or # (no
//     character reference becomes markup) and between two { (no Adaptive
//     Card expression or DATE/TIME function);
//   - a zero-width space before a leading -, +, # or number followed by
//     . or ) (no list or heading);
//   - a space for each control or format character: no line of its own,
//     no text shown in another order than written.
func lookalikeEscape(s string) string {
	runes := []rune(s)
	var b strings.Builder
	b.Grow(len(s))
	word := func(i int) bool {
		return i >= 0 && i < len(runes) && (unicode.IsLetter(runes[i]) || unicode.IsDigit(runes[i]))
	}
	next := func(i int) rune {
		if i+1 < len(runes) {
			return runes[i+1]
		}
		return 0
	}
	if leadingListMarker(s) {
		b.WriteRune('\u200b')
	}
	for i, c := range runes {
		if l, ok := lookalikes[c]; ok {
			b.WriteRune(l)
			continue
		}
		switch {
		case c == '_' && !(word(i-1) && word(i+1)):
			b.WriteRune('＿')
		case c == '@',
			c == ':' && strings.HasPrefix(string(runes[i+1:min(i+3, len(runes))]), "//"),
			c == '.' && word(i-1) && word(i+1),
			c == '&' && (unicode.IsLetter(next(i)) || next(i) == '#'),
			c == '{' && next(i) == '{':
			b.WriteRune(c)
			b.WriteRune('\u200b')
		case unicode.In(c, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp):
			b.WriteByte(' ')
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// leadingListMarker reports whether s begins as a Markdown list item or
// heading would: -, + or #, or digits followed by . or ).
func leadingListMarker(s string) bool {
	if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") || strings.HasPrefix(s, "#") {
		return true
	}
	digits := strings.TrimLeft(s, "0123456789")
	return len(digits) < len(s) && (strings.HasPrefix(digits, ".") || strings.HasPrefix(digits, ")"))
}

// cutRunes is s cut to at most n characters, "" for n ≤ 0.
func cutRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
