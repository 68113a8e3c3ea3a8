import { pinnedRequest, pinnedUrl, type Lookup } from "../webhooks/safety";
import { sniffContentType } from "./sniff";
import { tracedFetch } from "../observability/trace";

/** The largest media file Textwire fetches, sends or keeps (docs/api.md). */
export const MAX_MEDIA_BYTES = 25 * 1024 * 1024;
/** Redirects followed from one URL, each hop checked as the first. */
export const MAX_REDIRECTS = 3;
/** One file's whole fetch, redirects included. */
const FETCH_TIMEOUT_MS = 60_000;

/** Why a file could not be fetched: `refused` (the URL's rules), `too-large`, or `failed` (the server, the network). */
export class MediaFetchError extends Error {
  override name = "MediaFetchError";
  constructor(
    readonly kind: "refused" | "too-large" | "failed",
    message: string,
  ) {
    super(message);
  }
}

export interface FetchedMedia {
  bytes: Uint8Array;
  /** From the response, or sniffed from the first bytes when missing or generic. */
  contentType: string;
}

export interface MediaFetchOptions {
  /** ALLOW_PRIVATE_URLS: any http(s) address (development and tests). */
  allowPrivate: boolean;
  /** E.g. Twilio's Basic auth; sent only to the URL's own origin, never after a redirect elsewhere. */
  headers?: Record<string, string>;
  maxBytes?: number;
  /** Resolves each host (node's DNS by default). */
  lookup?: Lookup;
}

const GENERIC_TYPES = new Set(["", "application/octet-stream", "binary/octet-stream", "application/unknown", "application/x-download"]);

/** The media type alone, lower case (`image/jpeg` of `image/JPEG; charset=…`). */
function mediaType(header: string | null): string {
  return (header ?? "").split(";")[0]!.trim().toLowerCase();
}

/**
 * Fetches one media file under the rules of webhook endpoints (src/webhooks/safety.ts: https
 * and public addresses unless allowPrivate, checked after resolving the host), following at
 * most MAX_REDIRECTS redirects, each hop checked again. The size limit holds while the body
 * streams in, whatever Content-Length says. Throws MediaFetchError.
 */
export async function fetchMedia(url: string, opts: MediaFetchOptions): Promise<FetchedMedia> {
  const maxBytes = opts.maxBytes ?? MAX_MEDIA_BYTES;
  const signal = AbortSignal.timeout(FETCH_TIMEOUT_MS);
  const origin = safeOrigin(url);
  let current = url;
  for (let hop = 0; ; hop++) {
    const checked = await pinnedUrl(current, opts.allowPrivate, opts.lookup);
    if ("problem" in checked) throw new MediaFetchError("refused", hop === 0 ? checked.problem : `redirected to a URL that ${checked.problem}`);
    let res: Response;
    try {
      // Connected to the address just checked, never to a second DNS answer (src/webhooks/safety.ts).
      res = await tracedFetch(
        ...pinnedRequest(checked.pinned, {
          redirect: "manual",
          headers: safeOrigin(current) === origin ? (opts.headers ?? {}) : {},
          signal,
        }),
      );
    } catch (err) {
      throw new MediaFetchError("failed", `could not be fetched (${(err as Error).name === "TimeoutError" ? "no answer in time" : (err as Error).message})`);
    }
    if (res.status >= 300 && res.status < 400 && res.headers.has("location")) {
      await res.body?.cancel();
      if (hop === MAX_REDIRECTS) throw new MediaFetchError("failed", `was redirected more than ${MAX_REDIRECTS} times`);
      current = new URL(res.headers.get("location")!, current).toString();
      continue;
    }
    if (!res.ok) {
      await res.body?.cancel();
      throw new MediaFetchError("failed", `could not be fetched (HTTP ${res.status})`);
    }
    const bytes = await readCapped(res, maxBytes);
    const declared = mediaType(res.headers.get("content-type"));
    const contentType = GENERIC_TYPES.has(declared) ? (sniffContentType(bytes) ?? "application/octet-stream") : declared;
    return { bytes, contentType };
  }
}

function safeOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return "";
  }
}

function tooLarge(maxBytes: number): MediaFetchError {
  return new MediaFetchError("too-large", `is larger than ${maxBytes / (1024 * 1024)} MiB`);
}

/** The body, at most `maxBytes`: refused early by Content-Length, else cut off while it streams. */
async function readCapped(res: Response, maxBytes: number): Promise<Uint8Array> {
  const declared = Number(res.headers.get("content-length") ?? NaN);
  if (declared > maxBytes) {
    await res.body?.cancel();
    throw tooLarge(maxBytes);
  }
  if (!res.body) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body) {
      size += chunk.length;
      if (size > maxBytes) throw tooLarge(maxBytes);
      chunks.push(chunk);
    }
  } catch (err) {
    if (err instanceof MediaFetchError) {
      await res.body.cancel().catch(() => undefined);
      throw err;
    }
    throw new MediaFetchError("failed", `could not be read (${(err as Error).message})`);
  }
  if (size === 0) throw new MediaFetchError("failed", "is empty");
  return Buffer.concat(chunks);
}
