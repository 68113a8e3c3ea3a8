import type { WebhookEndpointRow } from "../db/port";
import { pinnedRequest, pinnedUrl, type Lookup } from "./safety";
import { deliveryHeaders } from "./signing";
import { annotateSpan, tracedFetch, withSpan } from "../observability/trace";

/** How long an attempt may take, from the address check to the end of the response body. */
export const ATTEMPT_TIMEOUT_MS = 15_000;
/** The most of a response body read; the rest is never downloaded. */
export const MAX_RESPONSE_BYTES = 64 * 1024;

/** How one attempt ended: `ok` for any 2xx; `status` null when no answer came; `error` says why it failed. */
export interface AttemptResult {
  ok: boolean;
  status: number | null;
  error: string | null;
}

class Timeout extends Error {}

/**
 * Makes one attempt of an event's delivery to an endpoint: the address checked after DNS
 * (a blocked one gets no request), then a signed POST whose redirects are not followed,
 * limited to `timeoutMs` for the answer and its body together.
 */
export function attemptDelivery(
  endpoint: WebhookEndpointRow,
  eventId: string,
  body: string,
  opts: AttemptOptions,
): Promise<AttemptResult> {
  return withSpan("webhook.attempt", { "textwire.webhook.endpoint": endpoint.id, "textwire.event.id": eventId }, async () => {
    const result = await attempt(endpoint, eventId, body, opts);
    annotateSpan({ "textwire.webhook.ok": result.ok, "http.response.status_code": result.status ?? undefined });
    return result;
  });
}

export interface AttemptOptions {
  allowPrivate: boolean;
  timeoutMs?: number;
  /** Resolves the endpoint's host (node's DNS by default). */
  lookup?: Lookup;
  /** Told why a URL was refused (the deliverer logs it at warn). */
  onRefused?: (reason: string) => void;
}

async function attempt(endpoint: WebhookEndpointRow, eventId: string, body: string, opts: AttemptOptions): Promise<AttemptResult> {
  const timeoutMs = opts.timeoutMs ?? ATTEMPT_TIMEOUT_MS;
  const controller = new AbortController();
  let expire!: (err: Timeout) => void;
  const expired = new Promise<never>((_, reject) => (expire = reject));
  const timer = setTimeout(() => {
    controller.abort();
    expire(new Timeout());
  }, timeoutMs);
  expired.catch(() => {});
  let status: number | null = null;
  try {
    // A lookup does not take a signal: the deadline races it.
    const checked = await Promise.race([pinnedUrl(endpoint.url, opts.allowPrivate, opts.lookup), expired]);
    if ("problem" in checked) {
      opts.onRefused?.(checked.problem);
      return { ok: false, status: null, error: `blocked: ${checked.problem}` };
    }
    const response = await tracedFetch(
      ...pinnedRequest(checked.pinned, {
        method: "POST",
        headers: deliveryHeaders(endpoint, eventId, body, new Date()),
        body,
        redirect: "manual",
        signal: controller.signal,
      }),
    );
    status = response.status;
    await readSome(response.body, MAX_RESPONSE_BYTES);
    if (status >= 200 && status < 300) return { ok: true, status, error: null };
    if (status >= 300 && status < 400) return { ok: false, status, error: `redirect not followed (${status})` };
    return { ok: false, status, error: `HTTP ${status}` };
  } catch (err) {
    if (err instanceof Timeout || controller.signal.aborted) return { ok: false, status, error: `timeout after ${timeoutMs / 1000} s` };
    return { ok: false, status, error: connectionError(err) };
  } finally {
    clearTimeout(timer);
  }
}

/** Reads up to `limit` bytes of a body, then cancels the stream so the rest is not downloaded. */
async function readSome(body: ReadableStream<Uint8Array> | null, limit: number) {
  if (!body) return;
  const reader = body.getReader();
  try {
    for (let read = 0; read < limit; ) {
      const chunk = await reader.read();
      if (chunk.done) return;
      read += chunk.value.byteLength;
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

/** A short reason for a request that got no answer (`connection error: ECONNREFUSED`). */
function connectionError(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === "string" && code) return `connection error: ${code}`;
  return `connection error: ${err instanceof Error ? err.message : String(err)}`;
}
