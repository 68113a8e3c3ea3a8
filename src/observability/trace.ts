/**
 * Tracing as the rest of the code sees it: spans around work and `traceparent` on outbound
 * HTTP. Until src/observability/otel.ts is loaded (OTEL_EXPORTER_OTLP_ENDPOINT set, src/main.ts)
 * each call is the plain call, and nothing of OpenTelemetry is imported.
 */

export type SpanAttributes = Record<string, string | number | boolean | undefined>;

/** What the OpenTelemetry side provides (src/observability/otel.ts). */
export interface Tracing {
  /** Runs `fn` in a new span: a child of the current one, or of the trace `parent` headers carry (a server span). */
  span<T>(name: string, attributes: SpanAttributes, fn: () => Promise<T>, opts?: { kind?: "server" | "client"; parent?: Headers }): Promise<T>;
  /** Renames the current span and adds attributes (a request's route, known once matched). */
  annotate(attributes: SpanAttributes, name?: string): void;
  /** Writes the current span's `traceparent` (and `tracestate`) into `headers`. */
  inject(headers: Headers): void;
  /** Exports what is left; resolves when done or failed. */
  shutdown(): Promise<void>;
}

let tracing: Tracing | undefined;

export function enableTracing(t: Tracing): void {
  tracing = t;
}

/** `fn` in a span named `name` (an error it throws marks the span and is rethrown). */
export function withSpan<T>(name: string, attributes: SpanAttributes, fn: () => Promise<T>): Promise<T> {
  return tracing ? tracing.span(name, attributes, fn) : fn();
}

/** An incoming request's span, continuing the caller's trace when its headers carry one. */
export function withRequestSpan<T>(headers: Headers, name: string, attributes: SpanAttributes, fn: () => Promise<T>): Promise<T> {
  return tracing ? tracing.span(name, attributes, fn, { kind: "server", parent: headers }) : fn();
}

/** Renames the current span and adds attributes; nothing when tracing is off. */
export function annotateSpan(attributes: SpanAttributes, name?: string): void {
  tracing?.annotate(attributes, name);
}

/**
 * fetch with a client span and `traceparent`: every outbound HTTP call (network drivers,
 * webhook deliveries, media downloads, the generator's model server). The span names the
 * host and path, never the query (BlueBubbles puts its password there).
 */
export function tracedFetch(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  if (!tracing) return fetch(input, init);
  const t = tracing;
  const url = new URL(input instanceof Request ? input.url : String(input));
  const method = (init.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase();
  const attributes = { "http.request.method": method, "server.address": url.hostname, "server.port": Number(url.port) || undefined, "url.path": url.pathname };
  return t.span(`HTTP ${method}`, attributes, async () => {
    const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
    t.inject(headers);
    const res = await fetch(input, { ...init, headers });
    t.annotate({ "http.response.status_code": res.status });
    return res;
  }, { kind: "client" });
}

/** Exports the spans not sent yet (a shutdown), waiting at most `ms` for a collector that does not answer; nothing when tracing is off. */
export async function flushTracing(ms = 3_000): Promise<void> {
  if (!tracing) return;
  let timer: Timer | undefined;
  await Promise.race([tracing.shutdown(), new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
