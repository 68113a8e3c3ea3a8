import { context, propagation, SpanKind, SpanStatusCode, trace, type Attributes, type Span } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { getNumberFromEnv, getStringFromEnv, W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { AlwaysOffSampler, AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider, type Sampler } from "@opentelemetry/sdk-trace";
import { ATTR_SERVICE_NAME } from "@opentelemetry/semantic-conventions";
import type { SpanAttributes, Tracing } from "./trace";

/** The standard OTEL_TRACES_SAMPLER and its argument, which the trace SDK itself does not read. Default: parentbased_always_on. */
export function samplerFromEnv(name = getStringFromEnv("OTEL_TRACES_SAMPLER"), arg = getNumberFromEnv("OTEL_TRACES_SAMPLER_ARG")): Sampler {
  const ratio = () => new TraceIdRatioBasedSampler(arg ?? 1);
  switch (name ?? "parentbased_always_on") {
    case "always_on":
      return new AlwaysOnSampler();
    case "always_off":
      return new AlwaysOffSampler();
    case "traceidratio":
      return ratio();
    case "parentbased_always_off":
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case "parentbased_traceidratio":
      return new ParentBasedSampler({ root: ratio() });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

const defined = (attributes: SpanAttributes): Attributes =>
  Object.fromEntries(Object.entries(attributes).filter(([, v]) => v !== undefined)) as Attributes;

/**
 * OpenTelemetry's trace SDK exporting over OTLP/HTTP (JSON) to OTEL_EXPORTER_OTLP_ENDPOINT
 * (the exporter reads it and the other OTEL_EXPORTER_OTLP_* variables itself), spans batched
 * every OTEL_BSP_SCHEDULE_DELAY ms (default 5000), context kept across awaits by
 * AsyncLocalStorage, W3C trace context on the wire. Loaded only when tracing is on.
 */
export function startOpenTelemetry(): Tracing {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: getStringFromEnv("OTEL_SERVICE_NAME") ?? "textwire" }),
    sampler: samplerFromEnv(),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: new OTLPTraceExporter(),
        scheduledDelayMillis: getNumberFromEnv("OTEL_BSP_SCHEDULE_DELAY") ?? 5000,
        ...(getNumberFromEnv("OTEL_BSP_MAX_QUEUE_SIZE") ? { maxQueueSize: getNumberFromEnv("OTEL_BSP_MAX_QUEUE_SIZE") } : {}),
      }),
    ],
  });
  const tracer = provider.getTracer("textwire");
  const headerGetter = { keys: (h: Headers) => [...h.keys()], get: (h: Headers, key: string) => h.get(key) ?? undefined };
  const headerSetter = { set: (h: Headers, key: string, value: string) => h.set(key, value) };

  return {
    span(name, attributes, fn, opts = {}) {
      const parent = opts.parent ? propagation.extract(context.active(), opts.parent, headerGetter) : context.active();
      const kind = opts.kind === "server" ? SpanKind.SERVER : opts.kind === "client" ? SpanKind.CLIENT : SpanKind.INTERNAL;
      return tracer.startActiveSpan(name, { kind, attributes: defined(attributes) }, parent, async (span: Span) => {
        try {
          return await fn();
        } catch (err) {
          span.recordException(err instanceof Error ? err : String(err));
          span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
          throw err;
        } finally {
          span.end();
        }
      });
    },
    annotate(attributes, name) {
      const span = trace.getActiveSpan();
      if (!span) return;
      span.setAttributes(defined(attributes));
      if (name) span.updateName(name);
    },
    inject(headers) {
      propagation.inject(context.active(), headers, headerSetter);
    },
    async shutdown() {
      await provider.shutdown().catch(() => {});
    },
  };
}
