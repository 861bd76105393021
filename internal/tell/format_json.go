package tell

import "encoding/json"

// NotifyJSON names the json format: the Notification itself.
const NotifyJSON = "json"

// jsonFormat sends the record as it is, for a receiver of the platform's
// own, which renders (and escapes) it.
type jsonFormat struct{}

func (jsonFormat) Name() string { return NotifyJSON }

func (jsonFormat) Help() string { return "the full record" }

func (jsonFormat) Body(n Notification) ([]byte, error) { return json.Marshal(n) }
