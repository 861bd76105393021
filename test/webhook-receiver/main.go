// Command webhook-receiver is the webhook endpoint of make demo: it listens
// on loopback, prints every request it gets (the signature checked when
// -signing-key-file is given) and answers 200. It prints its URL first.
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
	"os"
	"strings"
	"time"

	"github.com/nsman/nsman/webhook"
)

func main() {
	addr := flag.String("listen", "127.0.0.1:0", "address to listen on")
	keyFile := flag.String("signing-key-file", "", "verify "+webhook.SignatureHeader+" with this key")
	flag.Parse()
	var key []byte
	if *keyFile != "" {
		data, err := os.ReadFile(*keyFile)
		if err != nil {
			log.Fatal(err)
		}
		key = []byte(strings.TrimSpace(string(data)))
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("http://%s\n", l.Addr())
	log.Fatal(http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		signature := "unsigned"
		if key != nil {
			signature = "signature valid"
			if err := webhook.VerifySignature(r.Header, body, key, time.Now(), 5*time.Minute); err != nil {
				signature = "signature INVALID: " + err.Error()
			}
		}
		fmt.Printf("%s %s %s (Idempotency-Key %s, %s)\n  %s\n", time.Now().UTC().Format(time.RFC3339), r.Method, r.URL.Path,
			r.Header.Get(webhook.IdempotencyKeyHeader), signature, body)
	})))
}
