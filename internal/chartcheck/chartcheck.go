// Package chartcheck reads the ECharts options a page embeds and checks
// what each chart holds, so tests can assert that every series has data,
// that every x lies where the page says it does (within a trial, a grid,
// the nights) and that values fit the unit their axis names. It reads
// the option JSON rather than pixels: a chart that draws but plots the
// wrong thing is what it is for.
package chartcheck

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Point is one datum of a series: its x (a number, a category name or a
// category index; nil when the datum is a bare value on a category axis)
// and its value. Absent is ECharts' "-": no value.
type Point struct {
	X      any
	Y      float64
	Absent bool
}

// Series is one series of a chart.
type Series struct {
	Name, Type string
	Points     []Point
	// MarkXs are the x ends of mark areas and the x of vertical mark
	// lines; MarkYs the y of horizontal mark lines.
	MarkXs, MarkYs []float64
}

// Chart is one chart's option as the checks need it.
type Chart struct {
	ID, Title    string
	XType, XName string
	// XMin and XMax are the x axis's bounds when the option sets them.
	XMin, XMax  *float64
	XCategories []string
	YName       string
	Series      []Series
}

// Options reads the options object that follows marker in a page (for
// example "var options = "): a JSON object of chart ID to option.
func Options(page []byte, marker string) (map[string]Chart, error) {
	s := string(page)
	i := strings.Index(s, marker)
	if i < 0 {
		return nil, fmt.Errorf("no %q in the page", marker)
	}
	dec := json.NewDecoder(strings.NewReader(s[i+len(marker):]))
	var raw map[string]json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("the options after %q: %w", marker, err)
	}
	out := map[string]Chart{}
	for id, opt := range raw {
		c, err := Parse(id, opt)
		if err != nil {
			return nil, err
		}
		out[id] = c
	}
	return out, nil
}

// Parse reads one chart's option.
func Parse(id string, option []byte) (Chart, error) {
	var o map[string]any
	if err := json.Unmarshal(option, &o); err != nil {
		return Chart{}, fmt.Errorf("chart %s: %w", id, err)
	}
	c := Chart{ID: id}
	if t, ok := first(o["title"]).(map[string]any); ok {
		c.Title, _ = t["text"].(string)
	}
	if x, ok := first(o["xAxis"]).(map[string]any); ok {
		c.XType, _ = x["type"].(string)
		c.XName, _ = x["name"].(string)
		if v, ok := x["min"].(float64); ok {
			c.XMin = &v
		}
		if v, ok := x["max"].(float64); ok {
			c.XMax = &v
		}
		if d, ok := x["data"].([]any); ok {
			if c.XType == "" {
				c.XType = "category"
			}
			for _, v := range d {
				c.XCategories = append(c.XCategories, fmt.Sprint(v))
			}
		}
	}
	if y, ok := first(o["yAxis"]).(map[string]any); ok {
		c.YName, _ = y["name"].(string)
	}
	series, _ := o["series"].([]any)
	for _, raw := range series {
		so, ok := raw.(map[string]any)
		if !ok {
			continue
		}
		s := Series{}
		s.Name, _ = so["name"].(string)
		s.Type, _ = so["type"].(string)
		data, _ := so["data"].([]any)
		for _, d := range data {
			s.Points = append(s.Points, point(d))
		}
		if ma, ok := so["markArea"].(map[string]any); ok {
			for _, pair := range asList(ma["data"]) {
				for _, end := range asList(pair) {
					if e, ok := end.(map[string]any); ok {
						if x, ok := e["xAxis"].(float64); ok {
							s.MarkXs = append(s.MarkXs, x)
						}
					}
				}
			}
		}
		if ml, ok := so["markLine"].(map[string]any); ok {
			for _, item := range asList(ml["data"]) {
				if e, ok := item.(map[string]any); ok {
					if x, ok := e["xAxis"].(float64); ok {
						s.MarkXs = append(s.MarkXs, x)
					}
					if y, ok := e["yAxis"].(float64); ok {
						s.MarkYs = append(s.MarkYs, y)
					}
				}
			}
		}
		c.Series = append(c.Series, s)
	}
	return c, nil
}

func first(v any) any {
	if l, ok := v.([]any); ok {
		if len(l) == 0 {
			return nil
		}
		return l[0]
	}
	return v
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// point reads a datum: a bare value, [x, y], [x, y, v] (a heatmap cell:
// x is the pair, y the cell's value) or an object with "value".
func point(d any) Point {
	if m, ok := d.(map[string]any); ok {
		d = m["value"]
	}
	switch v := d.(type) {
	case float64:
		return Point{Y: v}
	case []any:
		switch len(v) {
		case 2:
			p := value(v[1])
			p.X = v[0]
			return p
		case 3:
			p := value(v[2])
			p.X = []any{v[0], v[1]}
			return p
		}
	}
	return Point{Absent: true}
}

func value(v any) Point {
	if f, ok := v.(float64); ok {
		return Point{Y: f}
	}
	return Point{Absent: true}
}

// Present are the points with a value.
func (s Series) Present() []Point {
	var out []Point
	for _, p := range s.Points {
		if !p.Absent {
			out = append(out, p)
		}
	}
	return out
}

// Problems checks what every series of every page must hold: data, and
// values (with the y of its horizontal marks) that fit r, the range of the
// unit its axis names. place, when not nil, says what is wrong with where
// a present point lies on its page's x axis ("" when nothing is). Each
// problem names the series; none means the series holds.
func (s Series) Problems(r Range, place func(Point) string) []string {
	var out []string
	pts := s.Present()
	if len(pts) == 0 {
		out = append(out, fmt.Sprintf("series %q has no data", s.Name))
	}
	var ys []float64
	for _, p := range pts {
		ys = append(ys, p.Y)
		if place == nil {
			continue
		}
		if why := place(p); why != "" {
			out = append(out, fmt.Sprintf("series %q: %s", s.Name, why))
		}
	}
	if err := r.Check(append(ys, s.MarkYs...)); err != nil {
		out = append(out, fmt.Sprintf("series %q: %v", s.Name, err))
	}
	return out
}

// Range is what values of a unit may plausibly be: a value outside it
// means the series is not in the unit its axis names (MiB or bytes under
// "GiB", a percentage under a share).
type Range struct {
	Min, Max float64
	// Whole: the unit counts things, so every value is a whole number.
	Whole bool
}

// Check reports the values of ys that do not fit r.
func (r Range) Check(ys []float64) error {
	var bad []string
	for _, y := range ys {
		if y < r.Min || y > r.Max || (r.Whole && y != float64(int64(y))) {
			bad = append(bad, fmt.Sprint(y))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%d value(s) outside [%g, %g]%s: %s", len(bad), r.Min, r.Max, map[bool]string{true: " (whole)"}[r.Whole], strings.Join(bad[:min(len(bad), 5)], ", "))
	}
	return nil
}
