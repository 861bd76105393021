// Command webhook-receiver is the webhook endpoint of make demo: it listens
// on loopback, prints every request it gets (signature version 2 checked
// when -signing-key-file is given) and answers 200. It prints its URL first.
//
// Signature version 2 names the URL nsman called, which a receiver states
// rather than reads from the request. This one answers at every path of its
// address, so it states its scheme and host (-url, by default the URL it
// prints) and takes the path and query from the request: right for a
// receiver that has a host to itself, never for one that shares a host with
// other receivers, which must state its full URL.
//
// It imports nsman's webhook package alone, as a user's receiver would: that
// package needs nothing beyond the standard library.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/nsman/nsman/webhook"
)

func main() {
	addr := flag.String("listen", "127.0.0.1:0", "address to listen on")
	keyFile := flag.String("signing-key-file", "", "verify "+webhook.SignatureV2Header+" with this key")
	base := flag.String("url", "", "scheme and host nsman calls this receiver at, e.g. http://webhook-receiver.namespace-manager.svc:8080, behind a Service or proxy (default: http://<listen address>, the URL it prints)")
	flag.Parse()
	var key []byte
	if *keyFile != "" {
		data, err := os.ReadFile(*keyFile)
		if err != nil {
			log.Fatal(err)
		}
		key = []byte(strings.TrimSpace(string(data)))
	}
	if *base != "" {
		u, err := url.Parse(*base)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" {
			log.Fatalf("-url %q: want scheme and host only, e.g. http://webhook-receiver.namespace-manager.svc:8080", *base)
		}
		*base = u.Scheme + "://" + u.Host
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	if *base == "" {
		*base = "http://" + l.Addr().String()
	}
	fmt.Printf("http://%s\n", l.Addr())
	log.Fatal(http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		signature := "unsigned"
		if key != nil {
			signature = "signature v2 valid"
			// The URL nsman was configured to call: this receiver's own
			// scheme and host, never the request's Host header, which a
			// replaying receiver chooses.
			if err := webhook.VerifyRequest(r, *base+r.URL.RequestURI(), body, key, time.Now(), 5*time.Minute); err != nil {
				signature = "signature v2 INVALID: " + err.Error()
			}
		}
		fmt.Printf("%s %s %s (Idempotency-Key %s, %s)\n  %s\n", time.Now().UTC().Format(time.RFC3339), r.Method, r.URL.Path,
			r.Header.Get(webhook.IdempotencyKeyHeader), signature, body)
	})))
}
