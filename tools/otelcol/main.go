// otelcol is an OpenTelemetry Collector with only what the tests need, built from the collector's own modules
// (go.opentelemetry.io/collector): the OTLP receiver (gRPC and HTTP), the OTLP/HTTP exporter and the nop exporter.
// The tests run it as the real receiver of the spans the services export, and forward what it received, as OTLP/JSON,
// to themselves; the benchmark lets it drop what it received.
package main

import (
	"log"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/nopexporter"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

func components() (otelcol.Factories, error) {
	return otelcol.Factories{
		Receivers: map[component.Type]receiver.Factory{otlpreceiver.NewFactory().Type(): otlpreceiver.NewFactory()},
		Exporters: map[component.Type]exporter.Factory{
			otlphttpexporter.NewFactory().Type(): otlphttpexporter.NewFactory(),
			nopexporter.NewFactory().Type():      nopexporter.NewFactory(),
		},
		Telemetry: otelconftelemetry.NewFactory(),
	}, nil
}

func main() {
	info := component.BuildInfo{Command: "otelcol", Description: "OpenTelemetry Collector for the Oncegate tests", Version: "0.165.0"}
	settings := otelcol.CollectorSettings{
		BuildInfo: info,
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory()},
				DefaultScheme:     "file",
			},
		},
	}
	if err := otelcol.NewCommand(settings).Execute(); err != nil {
		log.Fatal(err)
	}
}
