package tell

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// NotifyTeams names the teams format: an Adaptive Card for a Microsoft
// Teams Workflows webhook.
const NotifyTeams = "teams"

// The Adaptive Card a Teams Workflows webhook ("Post to a channel when a
// webhook request is received") posts: a message whose one attachment is
// the card, in the schema version Teams renders.
const (
	teamsCardContentType = "application/vnd.microsoft.card.adaptive"
	teamsCardSchema      = "http://adaptivecards.io/schemas/adaptive-card.json"
	teamsCardVersion     = "1.4"
	// teamsMaxBody bounds the request body: Teams refuses a message over
	// about 28 KB, and a card a little under it leaves room for what the
	// workflow adds.
	teamsMaxBody = 27 * 1024
	// teamsMessageShare is what a long message keeps, in characters, of
	// a card that must be cut, before any effect is left out.
	teamsMessageShare = teamsMaxBody / 4
)

// teamsFormat sends an Adaptive Card: the outcome as a title, the time of
// the sweep in the reader's own time zone and locale (the card's DATE and
// TIME functions), the facts (namespace, manager or rule, policy, action,
// result, what was reclaimed), the message and a line per effect. What a
// tenant wrote is escaped by lookalikeEscape: TextBlocks and Facts render
// a subset of Markdown. A card over teamsMaxBody is cut, and says so: a
// long message to teamsMessageShare, then the effects from the last, then
// the message further.
type teamsFormat struct{}

func (teamsFormat) Name() string { return NotifyTeams }

func (teamsFormat) Help() string {
	return "an Adaptive Card for a Microsoft Teams Workflows webhook"
}

type teamsMessage struct {
	Type        string            `json:"type"`
	Attachments []teamsAttachment `json:"attachments"`
}

type teamsAttachment struct {
	ContentType string `json:"contentType"`
	// ContentURL is null: the card is inline, as Teams' documented body
	// has it.
	ContentURL *string   `json:"contentUrl"`
	Content    teamsCard `json:"content"`
}

type teamsCard struct {
	Schema  string         `json:"$schema"`
	Type    string         `json:"type"`
	Version string         `json:"version"`
	Body    []teamsElement `json:"body"`
	// Actions are the notification's signed links, a button each.
	Actions []teamsAction `json:"actions,omitempty"`
	MSTeams teamsWidth    `json:"msteams"`
}

// teamsAction is an Action.OpenUrl: a button that opens a link of nsman's.
type teamsAction struct {
	Type  string `json:"type"`
	Title string `json:"title"`
	URL   string `json:"url"`
}

// teamsWidth widens the card to the channel's width: facts and effects
// wrap less.
type teamsWidth struct {
	Width string `json:"width"`
}

// teamsElement is a TextBlock or a FactSet.
type teamsElement struct {
	Type     string      `json:"type"`
	Text     string      `json:"text,omitempty"`
	Weight   string      `json:"weight,omitempty"`
	Size     string      `json:"size,omitempty"`
	IsSubtle bool        `json:"isSubtle,omitempty"`
	Spacing  string      `json:"spacing,omitempty"`
	Wrap     bool        `json:"wrap,omitempty"`
	Facts    []teamsFact `json:"facts,omitempty"`
}

type teamsFact struct {
	Title string `json:"title"`
	Value string `json:"value"`
}

func (teamsFormat) Body(n Notification) ([]byte, error) {
	p := chatPartsOf(n, lookalikeEscape)
	effects := len(p.Effects)
	body, err := teamsBody(n.Time, p, "")
	for cutMessage, cutNames := false, false; err == nil && len(body) > teamsMaxBody; {
		over := len(body) - teamsMaxBody + 200 // and the note's
		switch {
		case !cutMessage && len(p.Message) > teamsMessageShare:
			// A long message gives way first, to its share of the card.
			msg := p.Message
			p.Message, cutMessage = cutRunes(msg, max(teamsMessageShare, utf8.RuneCountInString(msg)-over))+"…", true
		case len(p.Effects) > 0:
			p.Effects = p.Effects[:dropFromEnd(p.Effects, over)]
		case p.Message != "":
			msg, keep := p.Message, utf8.RuneCountInString(p.Message)-over
			p.Message, cutMessage = "", true
			if keep > 0 {
				p.Message = cutRunes(msg, keep) + "…"
			}
		case !cutNames:
			// Names and the policy's are bounded by the API server; cut
			// them all the same rather than send what Teams refuses.
			p.Target, p.Subject, p.Policy, cutNames = cutRunes(p.Target, 256), cutRunes(p.Subject, 512), cutRunes(p.Policy, 256), true
		default:
			return nil, fmt.Errorf("a Teams card of %d bytes, cut, is still over %d", len(body), teamsMaxBody)
		}
		body, err = teamsBody(n.Time, p, teamsCutNote(effects-len(p.Effects), effects, cutMessage))
	}
	return body, err
}

// dropFromEnd is how many of effects to keep so that those dropped, from
// the end, take at least over bytes of a card with them (each also its
// TextBlock's).
func dropFromEnd(effects []string, over int) int {
	keep := len(effects)
	for freed := 0; keep > 0 && freed < over; keep-- {
		freed += len(effects[keep-1]) + len(`{"type":"TextBlock","text":"","spacing":"None","wrap":true},`)
	}
	return keep
}

// teamsCutNote says what a card cut to teamsMaxBody left out.
func teamsCutNote(dropped, effects int, cutMessage bool) string {
	var what []string
	if cutMessage {
		what = append(what, "the message's end")
	}
	if dropped > 0 {
		what = append(what, fmt.Sprintf("%d of %d effects", dropped, effects))
	}
	if len(what) == 0 {
		what = append(what, "the names' ends")
	}
	return "Cut to stay under Teams' 28 KB: " + strings.Join(what, " and ") + " not shown."
}

// teamsBody is the message that tells p, sent at sent, with note (if any)
// last.
func teamsBody(sent time.Time, p chatParts, note string) ([]byte, error) {
	text := func(s string) teamsElement { return teamsElement{Type: "TextBlock", Text: s, Wrap: true} }
	title := text("nsman: " + p.Action + " of namespace " + p.Target + " " + p.Result)
	title.Weight, title.Size = "Bolder", "Medium"
	elements := []teamsElement{title}
	if !sent.IsZero() {
		at := sent.UTC().Format("2006-01-02T15:04:05Z")
		when := text("{{DATE(" + at + ", SHORT)}} {{TIME(" + at + ")}}")
		when.IsSubtle, when.Spacing = true, "None"
		elements = append(elements, when)
	}
	facts := []teamsFact{{"Namespace", p.Target}, {strings.ToUpper(p.Kind[:1]) + p.Kind[1:], p.Subject}, {"Policy", p.Policy}, {"Action", p.Action}, {"Result", p.Result}}
	if p.Reclaimed != "" {
		facts = append(facts, teamsFact{"Reclaimed", p.Reclaimed})
	}
	elements = append(elements, teamsElement{Type: "FactSet", Facts: facts})
	if p.Message != "" {
		elements = append(elements, text(p.Message))
	}
	for _, e := range p.Effects {
		effect := text(e)
		effect.Spacing = "None"
		elements = append(elements, effect)
	}
	if note != "" {
		cut := text(note)
		cut.IsSubtle = true
		elements = append(elements, cut)
	}
	card := teamsCard{Schema: teamsCardSchema, Type: "AdaptiveCard", Version: teamsCardVersion, Body: elements, MSTeams: teamsWidth{Width: "Full"}}
	for _, l := range p.Links {
		card.Actions = append(card.Actions, teamsAction{Type: "Action.OpenUrl", Title: linkLabel(l), URL: l.URL})
	}
	return marshalUnescaped(teamsMessage{Type: "message", Attachments: []teamsAttachment{{ContentType: teamsCardContentType, Content: card}}})
}

// marshalUnescaped is v as JSON without encoding/json's escapes of <, >
// and &, which a receiver decodes alike: a body that reads as it will
// show.
func marshalUnescaped(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
