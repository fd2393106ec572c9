// Package templates holds what the HTML report is made of, embedded in the
// binary: the page template and Apache ECharts 5.6.0's echarts.min.js,
// vendored from the npm package (Apache-2.0; ECHARTS-LICENSE and
// ECHARTS-NOTICE are its licence and notice, kept beside it and printed
// into every report).
package templates

import (
	"bytes"
	_ "embed"
	"html/template"
	"strings"
)

//go:embed echarts.min.js
var echartsJS string

//go:embed ECHARTS-NOTICE
var echartsNotice string

//go:embed report.html.tmpl
var reportHTML string

//go:embed sweep.html.tmpl
var sweepHTML string

//go:embed trend.html.tmpl
var trendHTML string

//go:embed fit.html.tmpl
var fitHTML string

// EchartsJS is echarts.min.js, safe to inline in a <script> element.
func EchartsJS() template.JS {
	// The vendored file has no "</script"; keep it that way if it is
	// ever replaced.
	return template.JS(strings.ReplaceAll(echartsJS, "</script", `<\/script`))
}

// EchartsNotice is ECharts' NOTICE file.
func EchartsNotice() string { return echartsNotice }

// Report parses the report page with funcs.
func Report(funcs template.FuncMap) (*template.Template, error) {
	return template.New("report").Funcs(funcs).Parse(reportHTML)
}

// Trend parses the nightly trend page with funcs.
func Trend(funcs template.FuncMap) (*template.Template, error) {
	return template.New("trend").Funcs(funcs).Parse(trendHTML)
}

// Sweep parses the sweep page (qmlsab sweep's heatmaps) with funcs.
func Sweep(funcs template.FuncMap) (*template.Template, error) {
	return template.New("sweep").Funcs(funcs).Parse(sweepHTML)
}

// Fit parses the ensemble's page (qmlsab calibrate --fit's fit.html)
// with funcs.
func Fit(funcs template.FuncMap) (*template.Template, error) {
	return template.New("fit").Funcs(funcs).Parse(fitHTML)
}

// Render parses a page with one of the parsers above (Report, Trend,
// Sweep or Fit) and funcs, and executes it with data.
func Render(parse func(template.FuncMap) (*template.Template, error), funcs template.FuncMap, data any) ([]byte, error) {
	tpl, err := parse(funcs)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := tpl.Execute(&b, data); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
