// Package telltest holds fixtures for the tests of what nsman tells
// receivers: a receiver that answers with a status line of its own, and
// words a hostile one would write.
package telltest

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
)

// Evil is what a receiver, or whoever names a manager, might write to
// reach the platform team's channel: a channel-wide mention and a link
// whose text hides where it goes.
const Evil = "<!channel> <https://evil.example|click> & co"

// Answering starts a receiver that answers every request with the raw
// status line statusLine ("HTTP/1.1 400 ..."), so that the reason phrase
// is the receiver's own, as net/http's server would not write it.
func Answering(t testing.TB, statusLine string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, req.Body)
				_, _ = io.WriteString(c, statusLine+"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			}()
		}
	}()
	return "http://" + l.Addr().String()
}
