// A stand-in for an OpenTelemetry collector's OTLP/HTTP receiver: POST /v1/traces with the
// JSON encoding (what @opentelemetry/exporter-trace-otlp-http sends: Content-Type
// application/json, ids as hex), answered 200 with an empty partial success, as the collector does.

/** One span as received, with its resource's service.name. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** 1 internal, 2 server, 3 client (OTLP's SpanKind). */
  kind: number;
  attributes: Record<string, unknown>;
  service: string | undefined;
}

export interface OtlpReceiver {
  /** For OTEL_EXPORTER_OTLP_ENDPOINT, e.g. http://127.0.0.1:43121 */
  url: string;
  spans: ReceivedSpan[];
  /** Content types of the export requests. */
  contentTypes: string[];
  /** Waits (bounded) for a span matching `test`. */
  waitFor(test: (s: ReceivedSpan) => boolean, ms?: number): Promise<ReceivedSpan>;
  stop(): Promise<void>;
}

type AnyValue = { stringValue?: string; intValue?: number | string; boolValue?: boolean; doubleValue?: number };
type KeyValue = { key: string; value: AnyValue };
const valueOf = (v: AnyValue) => v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.boolValue ?? v.doubleValue));
const attributesOf = (list: KeyValue[] = []) => Object.fromEntries(list.map((a) => [a.key, valueOf(a.value)]));

export function startOtlpReceiver(): OtlpReceiver {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      if (req.method !== "POST" || new URL(req.url).pathname !== "/v1/traces") return new Response("not found", { status: 404 });
      contentTypes.push(req.headers.get("content-type") ?? "");
      const body = (await req.json()) as { resourceSpans?: { resource?: { attributes?: KeyValue[] }; scopeSpans?: { spans?: (Omit<ReceivedSpan, "attributes" | "service"> & { attributes?: KeyValue[] })[] }[] }[] };
      for (const rs of body.resourceSpans ?? []) {
        const service = attributesOf(rs.resource?.attributes)["service.name"] as string | undefined;
        for (const ss of rs.scopeSpans ?? []) for (const s of ss.spans ?? []) spans.push({ ...s, attributes: attributesOf(s.attributes), service });
      }
      return Response.json({ partialSuccess: {} });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    spans,
    contentTypes,
    async waitFor(test, ms = 15_000) {
      const deadline = Date.now() + ms;
      for (;;) {
        const found = spans.find(test);
        if (found) return found;
        if (Date.now() > deadline) throw new Error(`no such span within ${ms} ms; got: ${spans.map((s) => s.name).join(", ")}`);
        await Bun.sleep(20);
      }
    },
    async stop() {
      await server.stop(true);
    },
  };
}
