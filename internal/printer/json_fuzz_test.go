package printer

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzIndent: what indent makes of anything json.Marshal writes is what
// json.Indent makes of it, strings of any bytes, nesting and empty lists
// and objects included.
func FuzzIndent(f *testing.F) {
	f.Add("plain", `a "quoted" {brace} [x], colon: back\slash`, uint8(3), true)
	f.Add("", "\\\"\x00\u2028é", uint8(0), false)
	f.Fuzz(func(t *testing.T, key, value string, n uint8, nest bool) {
		var v any = map[string]any{key: value, "list": make([]string, n%4), "empty": map[string]any{}}
		if nest {
			v = []any{v, []any{}, map[string]any{value: v}, 1.5, nil, true}
		}
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := json.Indent(&want, data, "    ", "  "); err != nil {
			t.Fatal(err)
		}
		if got := indent(nil, data, "    "); !bytes.Equal(got, want.Bytes()) {
			t.Errorf("indent of %s:\n%s\nwant\n%s", data, got, want.Bytes())
		}
	})
}
