package links

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var (
	testKey = []byte("the-signing-key")
	t0      = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
)

func testLink(mut ...func(*Link)) Link {
	l := Link{Namespace: "preview-1", UID: "1111-2222", Action: Extend, Duration: 24 * time.Hour, Expires: t0.Add(DefaultValidity)}
	for _, m := range mut {
		m(&l)
	}
	return l
}

// alter changes one field of token's link, keeping its signature.
func alter(token string, mut func(*Link)) string {
	good, _ := Verify(testKey, token, t0)
	mut(&good)
	sig := token[strings.Index(token, ".")+1:]
	return Sign([]byte("whatever"), good)[:strings.Index(Sign([]byte("whatever"), good), ".")] + "." + sig
}

func TestVerify(t *testing.T) {
	good := Sign(testKey, testLink())
	for _, tc := range []struct {
		name  string
		token string
		key   []byte
		now   time.Time
		want  error
	}{
		{name: "as signed", token: good, now: t0},
		{name: "just before it expires", token: good, now: t0.Add(DefaultValidity - time.Second)},
		{name: "expired", token: good, now: t0.Add(DefaultValidity), want: ErrExpired},
		{name: "another key", token: good, key: []byte("another"), now: t0, want: ErrSignature},
		{name: "namespace altered", token: alter(good, func(l *Link) { l.Namespace = "production" }), now: t0, want: ErrSignature},
		{name: "uid altered", token: alter(good, func(l *Link) { l.UID = "3333" }), now: t0, want: ErrSignature},
		{name: "action altered", token: alter(good, func(l *Link) { l.Action = Wake }), now: t0, want: ErrSignature},
		{name: "duration altered", token: alter(good, func(l *Link) { l.Duration = 7 * 24 * time.Hour }), now: t0, want: ErrSignature},
		{name: "expiry pushed back", token: alter(good, func(l *Link) { l.Expires = t0.AddDate(10, 0, 0) }), now: t0, want: ErrSignature},
		{name: "signature altered", token: good[:strings.Index(good, ".")] + ".AAAA", now: t0, want: ErrSignature},
		{name: "no signature", token: good[:strings.Index(good, ".")], now: t0, want: ErrMalformed},
		{name: "unknown action, signed", token: Sign(testKey, testLink(func(l *Link) { l.Action = "delete" })), now: t0, want: ErrAction},
		{name: "duration over the bound, signed", token: Sign(testKey, testLink(func(l *Link) { l.Duration = MaxDuration + time.Second })), now: t0, want: ErrDuration},
		{name: "duration zero", token: Sign(testKey, testLink(func(l *Link) { l.Duration = 0 })), now: t0, want: ErrDuration},
		{name: "too long", token: good + strings.Repeat("A", MaxToken), now: t0, want: ErrMalformed},
		{name: "empty", token: "", now: t0, want: ErrMalformed},
		{name: "not base64", token: "%zz.%zz", now: t0, want: ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := testKey
			if tc.key != nil {
				key = tc.key
			}
			got, err := Verify(key, tc.token, tc.now)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Verify: %v, want %v", err, tc.want)
			}
			if tc.want == nil && got != testLink() {
				t.Errorf("Verify = %+v, want %+v", got, testLink())
			}
		})
	}
}

func TestOffers(t *testing.T) {
	offers := Offers("https://nsman.example.com/", testKey, "preview-1", "1111-2222", t0)
	want := []struct {
		a Action
		d time.Duration
	}{{Extend, 24 * time.Hour}, {Extend, 7 * 24 * time.Hour}, {Wake, 2 * time.Hour}}
	if len(offers) != len(want) {
		t.Fatalf("%d offers, want %d", len(offers), len(want))
	}
	for i, o := range offers {
		if o.Link.Action != want[i].a || o.Link.Duration != want[i].d || !o.Link.Expires.Equal(t0.Add(DefaultValidity)) {
			t.Errorf("offer %d = %+v, want %s for %s, expiring %s", i, o.Link, want[i].a, want[i].d, t0.Add(DefaultValidity))
		}
		token, ok := strings.CutPrefix(o.URL, "https://nsman.example.com/link?t=")
		if !ok {
			t.Fatalf("offer %d's URL %s is not below the base's /link", i, o.URL)
		}
		if l, err := Verify(testKey, token, t0); err != nil || l != o.Link {
			t.Errorf("offer %d's token verifies as %+v, %v", i, l, err)
		}
		if strings.Contains(o.URL, string(testKey)) {
			t.Errorf("offer %d's URL shows the key", i)
		}
	}
}

func TestReadKey(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, content, want, err string
	}{
		{name: "trimmed", content: "  s3cret\n", want: "s3cret"},
		{name: "empty", content: " \n", err: "is empty"},
		{name: "too long", content: strings.Repeat("k", MaxKeyBytes+1), err: "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, err := ReadKey(write(tc.name, tc.content))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "kkkk") {
					t.Fatalf("ReadKey: %v, want an error saying %q without the content", err, tc.err)
				}
				return
			}
			if err != nil || string(key) != tc.want {
				t.Fatalf("ReadKey = %q, %v, want %q", key, err, tc.want)
			}
		})
	}
	if _, err := ReadKey(filepath.Join(dir, "missing")); err == nil {
		t.Error("ReadKey of a missing file: no error")
	}
}

func TestCheckBase(t *testing.T) {
	for base, ok := range map[string]bool{
		"https://nsman.example.com":       true,
		"http://127.0.0.1:8080/nsman/":    true,
		"ftp://nsman.example.com":         false,
		"nsman.example.com":               false,
		"https://nsman.example.com/?a=b":  false,
		"https://nsman.example.com/#frag": false,
	} {
		if err := CheckBase(base); (err == nil) != ok {
			t.Errorf("CheckBase(%q) = %v, want ok=%v", base, err, ok)
		}
	}
}

func TestFromFlags(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, base, keyFile, err string
	}{
		{name: "neither"},
		{name: "both", base: "https://nsman.example.com", keyFile: keyFile},
		{name: "the URL alone", base: "https://nsman.example.com", err: "give both, or neither"},
		{name: "the key alone", keyFile: keyFile, err: "give both, or neither"},
		{name: "not a URL", base: "nsman.example.com", keyFile: keyFile, err: "--links-url"},
		{name: "no key file", base: "https://nsman.example.com", keyFile: keyFile + ".missing", err: "--links-signing-key-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, key, err := FromFlags(tc.base, tc.keyFile)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("FromFlags: %v, want an error saying %q, without the key", err, tc.err)
				}
				return
			}
			if err != nil || base != tc.base || (tc.keyFile != "") != (string(key) == "s3cret") {
				t.Fatalf("FromFlags = %q, %q, %v", base, key, err)
			}
		})
	}
}
