// rpcprof-otelcol: an OpenTelemetry Collector for rpcprof's tests, every module at one release
// (go.mod): the OTLP receiver (gRPC and HTTP); contrib's file exporter, which writes what it receives
// as OTLP JSON or protobuf; the OTLP exporters (otlp_grpc, otlp_http), which forward it, as the
// configuration docs/fleet.md gives for Pyroscope does. Profiles need the collector's feature gate:
//
//	rpcprof-otelcol --config FILE --feature-gates=service.profilesSupport
package main

import (
	"context"
	"log"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/otlpexporter"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry"
	"go.uber.org/zap"
)

// telemetryConfig takes the service's telemetry section as the Collector's own configurations write it
// (logs and metrics levels); this Collector logs to stderr and keeps no metrics or traces of its own, which
// spares it otelconf's telemetry (its resource detectors alone are most of a Collector's build).
type telemetryConfig struct {
	Logs struct {
		Level string `mapstructure:"level"`
	} `mapstructure:"logs"`
	Metrics struct {
		Level string `mapstructure:"level"`
	} `mapstructure:"metrics"`
}

func stderrLogger(_ context.Context, _ telemetry.LoggerSettings, cfg component.Config) (*zap.Logger, component.ShutdownFunc, error) {
	config := zap.NewProductionConfig()
	if level := cfg.(*telemetryConfig).Logs.Level; level != "" {
		if err := config.Level.UnmarshalText([]byte(level)); err != nil {
			return nil, nil, err
		}
	}
	logger, err := config.Build()
	return logger, nil, err
}

func components() (otelcol.Factories, error) {
	receivers, err := otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory())
	if err != nil {
		return otelcol.Factories{}, err
	}
	exporters, err := otelcol.MakeFactoryMap[exporter.Factory](fileexporter.NewFactory(), otlpexporter.NewFactory(),
		otlphttpexporter.NewFactory())
	if err != nil {
		return otelcol.Factories{}, err
	}
	return otelcol.Factories{Receivers: receivers, Exporters: exporters, Telemetry: telemetry.NewFactory(
		func() component.Config { return &telemetryConfig{} }, telemetry.WithCreateLogger(stderrLogger))}, nil
}

func main() {
	settings := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{Command: "rpcprof-otelcol", Description: "rpcprof's test collector",
			Version: "0.165.0"},
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{ResolverSettings: confmap.ResolverSettings{
			ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory()},
			DefaultScheme:     "file",
		}},
	}
	if err := otelcol.NewCommand(settings).Execute(); err != nil {
		log.Fatal(err)
	}
}
