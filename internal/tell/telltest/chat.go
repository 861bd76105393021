package telltest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"unicode/utf16"
)

// Receiver is a stand-in for a chat service's incoming webhook: it checks
// each body it receives against the service's documented schema, answers
// as the service does (or 400 with what is wrong, failing the test), and
// keeps the bodies it accepted.
type Receiver struct {
	URL    string
	mu     sync.Mutex
	bodies [][]byte
}

// Bodies are the bodies r accepted, in order.
func (r *Receiver) Bodies() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.bodies)
}

// receiver starts a Receiver that checks bodies with check and answers one
// it accepts with status and answer.
func receiver(t testing.TB, service string, check func([]byte) error, status int, answer string) *Receiver {
	t.Helper()
	r := &Receiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		if err == nil && req.Method != http.MethodPost {
			err = fmt.Errorf("method %s, want POST", req.Method)
		}
		if ct := req.Header.Get("Content-Type"); err == nil && ct != "application/json" {
			err = fmt.Errorf("Content-Type %q, want application/json", ct)
		}
		if err == nil {
			err = check(body)
		}
		if err != nil {
			t.Errorf("%s refuses the body: %v\n%s", service, err, body)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.bodies = append(r.bodies, body)
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// TeamsMaxBody is the largest message a Teams webhook posts: about 28 KB.
const TeamsMaxBody = 28 * 1024

// Teams starts a stand-in for a Microsoft Teams Workflows webhook ("Post to
// a channel when a webhook request is received"), which answers 202
// Accepted to a body CheckTeams accepts.
func Teams(t testing.TB) *Receiver {
	return receiver(t, "Teams", CheckTeams, http.StatusAccepted, "")
}

// CheckTeams holds body to what a Teams Workflows webhook posts: at most
// TeamsMaxBody bytes; {"type": "message", "attachments": [...]}, each
// attachment of contentType application/vnd.microsoft.card.adaptive with
// a contentUrl of null and an Adaptive Card as its content: the card's
// $schema, type AdaptiveCard, a version Teams renders (1.0 to 1.5), and a
// body of TextBlocks (a text, and the properties the schema gives them,
// typed) and FactSets (facts, each a title and a value). A property the
// schema does not know is refused, as the card's validation would.
func CheckTeams(body []byte) error {
	if len(body) > TeamsMaxBody {
		return fmt.Errorf("%d bytes, over Teams' %d", len(body), TeamsMaxBody)
	}
	var msg struct {
		Type        string `json:"type"`
		Attachments []struct {
			ContentType string           `json:"contentType"`
			ContentURL  *json.RawMessage `json:"contentUrl"`
			Content     json.RawMessage  `json:"content"`
		} `json:"attachments"`
	}
	if err := strict(body, &msg); err != nil {
		return fmt.Errorf("message: %w", err)
	}
	if msg.Type != "message" || len(msg.Attachments) == 0 {
		return fmt.Errorf("type %q with %d attachments, want a message with its card", msg.Type, len(msg.Attachments))
	}
	for _, a := range msg.Attachments {
		if a.ContentType != "application/vnd.microsoft.card.adaptive" {
			return fmt.Errorf("attachment of contentType %q", a.ContentType)
		}
		if a.ContentURL != nil && string(*a.ContentURL) != "null" {
			return fmt.Errorf("contentUrl %s, want null: the card is inline", *a.ContentURL)
		}
		if !bytes.Contains(body, []byte(`"contentUrl":null`)) {
			return errors.New("no contentUrl: the Workflows template reads it")
		}
		if err := checkCard(a.Content); err != nil {
			return err
		}
	}
	return nil
}

// checkCard holds an Adaptive Card to its schema, for the elements nsman
// sends.
func checkCard(raw json.RawMessage) error {
	var card struct {
		Schema  string            `json:"$schema"`
		Type    string            `json:"type"`
		Version string            `json:"version"`
		Body    []json.RawMessage `json:"body"`
		MSTeams struct {
			Width string `json:"width"`
		} `json:"msteams"`
	}
	if err := strict(raw, &card); err != nil {
		return fmt.Errorf("card: %w", err)
	}
	switch {
	case card.Schema != "http://adaptivecards.io/schemas/adaptive-card.json":
		return fmt.Errorf("$schema %q", card.Schema)
	case card.Type != "AdaptiveCard":
		return fmt.Errorf("card type %q", card.Type)
	case !slices.Contains([]string{"1.0", "1.1", "1.2", "1.3", "1.4", "1.5"}, card.Version):
		return fmt.Errorf("card version %q, which Teams does not render", card.Version)
	case card.MSTeams.Width != "" && card.MSTeams.Width != "Full":
		return fmt.Errorf("msteams.width %q", card.MSTeams.Width)
	case len(card.Body) == 0:
		return errors.New("a card with an empty body")
	}
	for i, raw := range card.Body {
		if err := checkElement(raw); err != nil {
			return fmt.Errorf("body[%d]: %w", i, err)
		}
	}
	return nil
}

func checkElement(raw json.RawMessage) error {
	var kind struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &kind); err != nil {
		return err
	}
	switch kind.Type {
	case "TextBlock":
		var tb struct {
			Type     string  `json:"type"`
			Text     *string `json:"text"`
			Wrap     bool    `json:"wrap"`
			IsSubtle bool    `json:"isSubtle"`
			Weight   string  `json:"weight"`
			Size     string  `json:"size"`
			Spacing  string  `json:"spacing"`
		}
		if err := strict(raw, &tb); err != nil {
			return err
		}
		switch {
		case tb.Text == nil:
			return errors.New("a TextBlock without its required text")
		case !slices.Contains([]string{"", "Default", "Lighter", "Bolder"}, tb.Weight):
			return fmt.Errorf("weight %q", tb.Weight)
		case !slices.Contains([]string{"", "Default", "Small", "Medium", "Large", "ExtraLarge"}, tb.Size):
			return fmt.Errorf("size %q", tb.Size)
		}
		return checkSpacing(tb.Spacing)
	case "FactSet":
		var fs struct {
			Type  string `json:"type"`
			Facts []struct {
				Title *string `json:"title"`
				Value *string `json:"value"`
			} `json:"facts"`
			Spacing string `json:"spacing"`
		}
		if err := strict(raw, &fs); err != nil {
			return err
		}
		if len(fs.Facts) == 0 {
			return errors.New("a FactSet without facts")
		}
		for _, f := range fs.Facts {
			if f.Title == nil || f.Value == nil {
				return errors.New("a fact without its required title and value")
			}
		}
		return checkSpacing(fs.Spacing)
	}
	return fmt.Errorf("element type %q, which nsman does not send", kind.Type)
}

func checkSpacing(s string) error {
	if !slices.Contains([]string{"", "None", "Small", "Default", "Medium", "Large", "ExtraLarge", "Padding"}, s) {
		return fmt.Errorf("spacing %q", s)
	}
	return nil
}

// GoogleChatMaxText is the longest text a Google Chat message has, in
// characters; GoogleChatMaxBody the largest message, in bytes.
const (
	GoogleChatMaxText = 4096
	GoogleChatMaxBody = 32000
)

// GoogleChat starts a stand-in for a Google Chat space's incoming webhook,
// which answers 200 with the message it created to a body CheckGoogleChat
// accepts.
func GoogleChat(t testing.TB) *Receiver {
	return receiver(t, "Google Chat", CheckGoogleChat, http.StatusOK, `{"name":"spaces/AAAA/messages/BBBB.BBBB","text":"..."}`)
}

// CheckGoogleChat holds body to a text message Google Chat posts: at most
// GoogleChatMaxBody bytes; {"text": ...} alone, a string, not empty, of at
// most GoogleChatMaxText characters (counted in UTF-16 units, as a client
// counts them: never fewer than characters).
func CheckGoogleChat(body []byte) error {
	if len(body) > GoogleChatMaxBody {
		return fmt.Errorf("%d bytes, over Google Chat's %d", len(body), GoogleChatMaxBody)
	}
	var msg struct {
		Text *string `json:"text"`
	}
	if err := strict(body, &msg); err != nil {
		return err
	}
	switch {
	case msg.Text == nil || *msg.Text == "":
		return errors.New("no text")
	case len(utf16.Encode([]rune(*msg.Text))) > GoogleChatMaxText:
		return fmt.Errorf("a text of %d characters, over Google Chat's %d", len(utf16.Encode([]rune(*msg.Text))), GoogleChatMaxText)
	}
	return nil
}

// strict decodes raw into v, refusing a field v does not know and anything
// after the value.
func strict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}
