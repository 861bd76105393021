package window

import (
	"regexp"
	"slices"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MaxWindows bounds a policy's windows, as nsman's CRD does.
const MaxWindows = 16

// clockTime is a window's from or to, HH:MM on a 24-hour clock.
var clockTime = regexp.MustCompile(`^([01][0-9]|2[0-3]):([0-5][0-9])$`)

// parser reads windows, collecting what it refuses; strict: it also
// refuses what nsman's CRD refuses (see policy.ParseStrict).
type parser struct {
	strict bool
	errs   field.ErrorList
}

// Parse reads a policy's windows (raw, at path): when the policy may act;
// nil when raw is absent. A time zone that this nsman does not know is
// refused here (the CRD cannot tell).
func Parse(raw any, path *field.Path, strict bool) ([]Window, field.ErrorList) {
	if raw == nil {
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, field.ErrorList{field.Invalid(path, raw, "must be a list")}
	}
	p := &parser{strict: strict}
	p.tooMany(path, len(list), MaxWindows)
	out := make([]Window, 0, len(list))
	for i, item := range list {
		ip := path.Index(i)
		obj, ok := item.(map[string]any)
		if !ok {
			p.errs = append(p.errs, field.Invalid(ip, item, "must be an object"))
			continue
		}
		w := p.window(obj, ip)
		if tz, wrongType := p.optionalStr(obj, "timeZone", ip); tz != "" && !wrongType {
			loc, err := zones.location(tz)
			if err != nil || tz == "Local" {
				p.errs = append(p.errs, field.Invalid(ip.Child("timeZone"), tz, "must be a time zone of the IANA database, such as Europe/Berlin or UTC"))
			} else {
				w.Location = loc
			}
		}
		out = append(out, w)
	}
	return out, p.errs
}

// window reads one window but its time zone: its days, dates and hours.
// A window of dates may leave out from and to: it is open all day on
// them, from 00:00 to 00:00 the next day.
func (p *parser) window(obj map[string]any, path *field.Path) Window {
	w := Window{Days: p.days(obj, path), Dates: p.dates(obj, path), Location: time.UTC}
	if obj["dates"] != nil && obj["from"] == nil && obj["to"] == nil {
		w.From, w.To = 0, 0 // all day
	} else {
		w.From, w.To = p.clock(obj, "from", path), p.clock(obj, "to", path)
		if w.From >= 0 && w.From == w.To {
			p.errs = append(p.errs, field.Invalid(path.Child("to"), obj["to"], "must differ from from (a window that crosses midnight ends before it begins: from 22:00 to 06:00; a window of dates alone, without from and to, is open all day)"))
		}
	}
	if len(w.Dates) > 0 && !w.opensOnSomeDate() {
		p.errs = append(p.errs, field.Invalid(path.Child("dates"), describeDates(w.Dates), "none of the dates falls on one of the window's days: it never opens (a window opens on the dates that fall on its days)"))
	}
	return w
}

// days reads a window's days: Mon … Sun; every day when absent.
func (p *parser) days(obj map[string]any, path *field.Path) []time.Weekday {
	dp := path.Child("days")
	raw, ok := obj["days"]
	if !ok || raw == nil {
		return nil
	}
	list, ok := raw.([]any)
	if !ok {
		p.errs = append(p.errs, field.Invalid(dp, raw, "must be a list"))
		return nil
	}
	p.tooMany(dp, len(list), len(dayNames))
	var days []time.Weekday
	for i, item := range list {
		name, _ := item.(string)
		d := slices.Index(dayNames, name)
		if d < 0 {
			p.errs = append(p.errs, field.NotSupported(dp.Index(i), item, []string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}))
			continue
		}
		if !slices.Contains(days, time.Weekday(d)) {
			days = append(days, time.Weekday(d))
		}
	}
	return days
}

// clock reads a window's from or to, in minutes after midnight; -1 when
// it is missing or malformed (reported).
func (p *parser) clock(obj map[string]any, key string, path *field.Path) int {
	s, wrongType := p.optionalStr(obj, key, path)
	m := clockTime.FindStringSubmatch(s)
	switch {
	case wrongType:
		return -1
	case s == "":
		p.errs = append(p.errs, field.Required(path.Child(key), "HH:MM (a window of dates alone, without from and to, is open all day)"))
		return -1
	case m == nil:
		p.errs = append(p.errs, field.Invalid(path.Child(key), s, "must be HH:MM on a 24-hour clock, 00:00 to 23:59"))
		return -1
	}
	h, _ := strconv.Atoi(m[1])
	mm, _ := strconv.Atoi(m[2])
	return h*60 + mm
}

// tooMany reports a list of n items above max, under strict.
func (p *parser) tooMany(path *field.Path, n, max int) {
	if p.strict && n > max {
		p.errs = append(p.errs, field.TooMany(path, n, max))
	}
}

// optionalStr reads the string at key, "" when absent; wrongType when it
// is not a string (reported).
func (p *parser) optionalStr(parent map[string]any, key string, path *field.Path) (s string, wrongType bool) {
	raw, ok := parent[key]
	if !ok || raw == nil {
		return "", false
	}
	s, ok = raw.(string)
	if !ok {
		p.errs = append(p.errs, field.Invalid(path.Child(key), raw, "must be a string"))
	}
	return s, !ok
}
