// Package patch is a sleep's patches (STUB: replaced by helper's).
package patch

import (
	"encoding/json"
	"reflect"
	"strings"
)

type Patch struct {
	Kind   string
	Group  string
	Labels map[string]string
	Merge  map[string]any
}

func (p Patch) String() string { return p.Kind + "." + p.Group }

func Applied(obj, merge map[string]any) bool {
	for k, v := range merge {
		cur, has := obj[k]
		switch m := v.(type) {
		case nil:
			if has {
				return false
			}
		case map[string]any:
			o, ok := cur.(map[string]any)
			if !ok || !Applied(o, m) {
				return false
			}
		default:
			a, _ := json.Marshal(cur)
			b, _ := json.Marshal(v)
			if !has || !reflect.DeepEqual(a, b) {
				return false
			}
		}
	}
	return true
}

func Inverse(obj, merge map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range merge {
		cur, has := obj[k]
		if m, ok := v.(map[string]any); ok {
			if o, ok := cur.(map[string]any); ok {
				out[k] = Inverse(o, m)
				continue
			}
		}
		if has {
			out[k] = cur
		} else {
			out[k] = nil
		}
	}
	return out
}

// Custom reports whether group is a custom resources' group: one with a
// dot, not Kubernetes' own (k8s.io and its subdomains).
func Custom(group string) bool {
	return strings.Contains(group, ".") && group != "k8s.io" && !strings.HasSuffix(group, ".k8s.io")
}
