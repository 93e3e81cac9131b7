// promparse reads a Prometheus text exposition on stdin with the Prometheus project's own parser
// (github.com/prometheus/common/expfmt) and prints, as JSON, every sample: family, type, labels and value.
// It exits 1, naming the line, when the exposition does not parse.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

type sample struct {
	Family string            `json:"family"`
	Type   string            `json:"type"`
	Labels map[string]string `json:"labels"`
	Value  float64           `json:"value"`
}

func main() {
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(os.Stdin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "promparse: %v\n", err)
		os.Exit(1)
	}
	names := make([]string, 0, len(families))
	for name := range families {
		names = append(names, name)
	}
	sort.Strings(names)
	samples := []sample{}
	for _, name := range names {
		family := families[name]
		for _, metric := range family.GetMetric() {
			labels := map[string]string{}
			for _, pair := range metric.GetLabel() {
				labels[pair.GetName()] = pair.GetValue()
			}
			samples = append(samples, sample{Family: name, Type: family.GetType().String(), Labels: labels, Value: valueOf(family.GetType(), metric)})
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(samples); err != nil {
		os.Exit(1)
	}
}

func valueOf(kind dto.MetricType, metric *dto.Metric) float64 {
	switch kind {
	case dto.MetricType_COUNTER:
		return metric.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return metric.GetGauge().GetValue()
	case dto.MetricType_HISTOGRAM:
		return float64(metric.GetHistogram().GetSampleCount())
	case dto.MetricType_SUMMARY:
		return float64(metric.GetSummary().GetSampleCount())
	default:
		return metric.GetUntyped().GetValue()
	}
}
