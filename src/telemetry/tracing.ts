import { enableTracing, tracing } from "./spans.ts";

/**
 * OpenTelemetry traces (docs/runtime.md, "Traces"): off unless OTEL_EXPORTER_OTLP_ENDPOINT (or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set; then the SDK exports Dispatch's spans over OTLP/HTTP, read
 * from the standard OTEL_* variables (protocol, headers, sampler, batch delays, resource attributes,
 * OTEL_SERVICE_NAME, OTEL_SDK_DISABLED). Only traces: metrics stay on /metrics, logs on stdout. Returns
 * the function that flushes and stops it, or undefined when tracing is off. The SDK is imported only
 * then: its exporters (gRPC among them) are ≈ 370 modules and 10 MB of heap a process without traces
 * never needs (bench/README.md, "Fourth round: idle memory").
 */
export async function startTracing(
  env: NodeJS.ProcessEnv = process.env,
): Promise<(() => Promise<void>) | undefined> {
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return undefined;
  // One SDK per process: a second Dispatch in it (tests) shares the first one's.
  if (tracing.enabled) return undefined;
  if (/^(true|1)$/i.test(env.OTEL_SDK_DISABLED ?? "")) return undefined;
  const { NodeSDK } = await import("@opentelemetry/sdk-node");
  // Checked again: a second Dispatch in this process may have started the SDK while this one imported it.
  if (tracing.enabled) return undefined;
  const sdk = new NodeSDK({
    serviceName: env.OTEL_SERVICE_NAME || "dispatch",
    // Dispatch makes its own spans (src/telemetry/spans.ts); no library is patched.
    instrumentations: [],
    metricReaders: [],
    logRecordProcessors: [],
  });
  sdk.start();
  enableTracing({
    captureContent: /^true$/i.test(env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT ?? ""),
  });
  return () => sdk.shutdown();
}
