import type { App } from "../app";
import type { MediaRow } from "../db/port";
import { AppError } from "../errors";
import { signedUrlProblem } from "../media/signed-url";
import { errorResponse } from "./errors";

/**
 * Serving kept media: `GET /api/media/:id` (the API key, like every /api route) and
 * `GET /media/:id?expires=&sig=` (a signed, expiring URL, for networks that fetch the files
 * themselves). Both answer `Range` (one range, RFC 9110 §14), HEAD, ETag and If-None-Match.
 */

/** What a Range header asks of a file of `size` bytes: one range (inclusive), the whole file, or nothing it has. */
export type RangeRequest = { start: number; end: number } | "whole" | "unsatisfiable";

/**
 * `bytes=a-b`, `bytes=a-` and `bytes=-n`. A header that is not one valid byte range (another
 * unit, several ranges, bad syntax) is ignored, as RFC 9110 allows: the whole file is sent.
 */
export function parseRange(header: string | null, size: number): RangeRequest {
  if (header === null) return "whole";
  const match = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!match || (match[1] === "" && match[2] === "")) return "whole";
  const [, first, last] = match as unknown as [string, string, string];
  if (first === "") {
    // The last n bytes; a suffix of 0 bytes is nothing.
    const n = Number(last);
    if (n === 0 || size === 0) return "unsatisfiable";
    return { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(first);
  const end = last === "" ? size - 1 : Number(last);
  // An invalid range (last before first) is ignored; a valid one past the end is not satisfiable.
  if (last !== "" && end < start) return "whole";
  if (start >= size) return "unsatisfiable";
  return { start, end: Math.min(end, size - 1) };
}

const ID = /^med_[0-9a-f]{32}$/;

const etagOf = (media: MediaRow) => `"${media.id}"`;

/** The response for one media file and this request's conditional and Range headers. */
async function mediaResponse(app: App, media: MediaRow, req: Request): Promise<Response> {
  const etag = etagOf(media);
  const headers: Record<string, string> = {
    "Content-Type": media.contentType,
    "Accept-Ranges": "bytes",
    ETag: etag,
    // The bytes of an id never change.
    "Cache-Control": "private, max-age=86400, immutable",
    // Files come from anywhere: never run one as a page of this origin.
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; sandbox",
  };
  const ifNoneMatch = req.headers.get("if-none-match");
  if (ifNoneMatch && (ifNoneMatch.trim() === "*" || ifNoneMatch.split(",").some((t) => t.trim().replace(/^W\//, "") === etag))) {
    return new Response(null, { status: 304, headers });
  }
  // If-Range with another validator: the file may have changed for the client, send it whole.
  const ifRange = req.headers.get("if-range");
  const range = ifRange !== null && ifRange.trim() !== etag ? "whole" : parseRange(req.headers.get("range"), media.size);
  if (range === "unsatisfiable") {
    return errorResponse({ code: "RANGE_NOT_SATISFIABLE", message: `range: outside the file's ${media.size} bytes` }, { "Content-Range": `bytes */${media.size}`, "Accept-Ranges": "bytes" });
  }
  const head = req.method === "HEAD";
  if (range === "whole") {
    const body = head ? null : await app.media.store.read(media.storeKey);
    return new Response(body, { headers: { ...headers, "Content-Length": String(media.size) } });
  }
  const body = head ? null : await app.media.store.readRange(media.storeKey, range.start, range.end);
  return new Response(body, {
    status: 206,
    headers: { ...headers, "Content-Range": `bytes ${range.start}-${range.end}/${media.size}`, "Content-Length": String(range.end - range.start + 1) },
  });
}

async function findMedia(app: App, id: string): Promise<MediaRow> {
  const media = ID.test(id) ? await app.storage.messages.media(id) : undefined;
  if (!media) throw new AppError("NOT_FOUND", `id: no media ${id.slice(0, 100)}`);
  return media;
}

export const API_MEDIA_PREFIX = "/api/media/";
export const SIGNED_MEDIA_PREFIX = "/media/";

/** GET /api/media/:id, behind the API key (checked by the routing table). */
export async function serveMedia(app: App, req: Request, url: URL): Promise<Response> {
  // Ids are `med_` and hex: nothing to decode, and a malformed escape is only a wrong id.
  const id = url.pathname.slice(API_MEDIA_PREFIX.length);
  return mediaResponse(app, await findMedia(app, id), req);
}

/** GET /media/:id?expires=&sig=: no key, the signature instead (403 when forged or expired). */
export async function serveSignedMedia(app: App, req: Request, url: URL): Promise<Response> {
  const id = url.pathname.slice(SIGNED_MEDIA_PREFIX.length);
  const problem = signedUrlProblem(await app.media.urlSecret(), id, url.searchParams);
  if (problem === "forged") throw new AppError("FORBIDDEN", "sig: missing or wrong");
  if (problem === "expired") throw new AppError("FORBIDDEN", "expires: the link has expired");
  if (problem === "too_far") throw new AppError("FORBIDDEN", "expires: more than 7 days ahead; a signed link lives at most 7 days");
  return mediaResponse(app, await findMedia(app, id), req);
}
