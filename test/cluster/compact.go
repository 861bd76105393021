package cluster

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
)

// CompactEtcd compacts etcd's history up to its current revision, as the
// API server does every few minutes: every resourceVersion older than now,
// and so every continue token handed out before, expires. Like the API
// server, it first records the revision under compact_rev_key, which API
// servers watch: their watch caches then drop the snapshots older than it
// (within 15 s) rather than go on serving them. It speaks to etcd's JSON
// gateway, so that the harness needs no etcd client.
func (c *Cluster) CompactEtcd(ctx context.Context) error {
	var head struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	// A range over a key that does not exist answers with the revision.
	if err := c.etcdCall(ctx, "/v3/kv/range", map[string]any{"key": "bnNtYW4tbm8tc3VjaC1rZXk="}, &head); err != nil {
		return err
	}
	if head.Header.Revision == "" {
		return fmt.Errorf("etcd answered no revision")
	}
	key := base64.StdEncoding.EncodeToString([]byte("compact_rev_key"))
	value := base64.StdEncoding.EncodeToString([]byte(head.Header.Revision))
	if err := c.etcdCall(ctx, "/v3/kv/put", map[string]any{"key": key, "value": value}, nil); err != nil {
		return err
	}
	return c.etcdCall(ctx, "/v3/kv/compaction", map[string]any{"revision": head.Header.Revision, "physical": true}, nil)
}

func (c *Cluster) etcdCall(ctx context.Context, path string, body, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.etcdURL+path, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		return fmt.Errorf("etcd %s: %s: %s", path, resp.Status, buf.String())
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
