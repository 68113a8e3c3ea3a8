import { randomBytes } from "node:crypto";
import { AppError } from "../errors";
import { errorText, type Logger } from "../log";
import type { MediaRow, NewMedia } from "../db/port";
import type { InboundMedia, OutboundMedia } from "../network/driver";
import { fetchMedia, MediaFetchError } from "./fetch";
import { signedMediaUrl } from "./signed-url";
import { newMediaKey, type MediaStore } from "./store";

/** What sending and receiving media needs (built once in src/app.ts). */
export interface MediaDeps {
  store: MediaStore;
  /** ALLOW_PRIVATE_URLS. */
  allowPrivate: boolean;
  /** PUBLIC_URL: where a network can fetch our signed media URLs; unset, networks get the file's original URL. */
  publicUrl?: string;
  /** The signing secret of media URLs (src/media/signed-url.ts). */
  urlSecret: () => Promise<string>;
}

/** Most files one message carries. */
export const MAX_MEDIA_PER_MESSAGE = 10;

export const newMediaId = () => `med_${randomBytes(16).toString("hex")}`;

/** A file fetched and written to the store, not yet in the database; `sourceUrl` where it came from. */
export type KeptMedia = NewMedia & { sourceUrl?: string };

async function keep(store: MediaStore, fetched: { bytes: Uint8Array; contentType: string }, sourceUrl?: string): Promise<KeptMedia> {
  const kept: KeptMedia = { id: newMediaId(), contentType: fetched.contentType, size: fetched.bytes.length, storeKey: newMediaKey() };
  if (sourceUrl) kept.sourceUrl = sourceUrl;
  await store.put(kept.storeKey, fetched.bytes, fetched.contentType);
  return kept;
}

/** Removes files whose message was not stored after all (best effort: an orphan file harms nobody). */
export async function discardMedia(deps: MediaDeps, kept: readonly KeptMedia[], log: Logger): Promise<void> {
  for (const m of kept) await deps.store.delete(m.storeKey).catch((err) => log.warn("media: an unused file could not be removed", { key: m.storeKey, error: errorText(err) }));
}

/**
 * The files of a send, fetched one after the other and kept, before the message is stored:
 * any that cannot be fetched refuses the whole send (400, or 413 over the size limit, naming
 * `media.N.url`), and the files kept so far are removed.
 */
export async function fetchSendMedia(deps: MediaDeps, urls: readonly string[], log: Logger): Promise<KeptMedia[]> {
  const kept: KeptMedia[] = [];
  for (const [i, url] of urls.entries()) {
    try {
      kept.push(await keep(deps.store, await fetchMedia(url, { allowPrivate: deps.allowPrivate }), url));
    } catch (err) {
      await discardMedia(deps, kept, log);
      if (!(err instanceof MediaFetchError)) throw err;
      const message = `media.${i}.url: ${err.kind === "refused" ? "" : "the file "}${err.message}`;
      throw new AppError(err.kind === "too-large" ? "PAYLOAD_TOO_LARGE" : "BAD_REQUEST", message);
    }
  }
  return kept;
}

/**
 * The files of an inbound message, downloaded and kept. A file that cannot be downloaded is
 * logged and left out: the message is stored with the files that came (docs/networks.md).
 */
export async function fetchInboundMedia(deps: MediaDeps, media: readonly InboundMedia[], log: Logger, context: Record<string, unknown>): Promise<KeptMedia[]> {
  const kept: KeptMedia[] = [];
  for (const [i, m] of media.slice(0, MAX_MEDIA_PER_MESSAGE).entries()) {
    try {
      const fetched = await fetchMedia(m.url, { allowPrivate: deps.allowPrivate || m.trusted === true, ...(m.headers ? { headers: m.headers } : {}) });
      kept.push(await keep(deps.store, { bytes: fetched.bytes, contentType: m.contentType && fetched.contentType === "application/octet-stream" ? m.contentType : fetched.contentType }));
    } catch (err) {
      log.warn("inbound media not downloaded; the message is stored without it", { ...context, position: i, error: errorText(err) });
    }
  }
  if (media.length > MAX_MEDIA_PER_MESSAGE) log.warn("inbound media beyond 10 files left out", { ...context, files: media.length });
  return kept;
}

/** The files of a message as a driver sends them: bytes read from the store when asked, a URL the network can fetch. */
export function outboundMedia(deps: MediaDeps, media: readonly (KeptMedia | MediaRow)[]): OutboundMedia[] {
  return media.map((m) => ({
    id: m.id,
    contentType: m.contentType,
    size: m.size,
    bytes: () => deps.store.read(m.storeKey),
    async url() {
      if (deps.publicUrl) return signedMediaUrl(deps.publicUrl, await deps.urlSecret(), m.id);
      const source = "sourceUrl" in m ? m.sourceUrl : undefined;
      if (!source) throw new AppError("BAD_REQUEST", "media: PUBLIC_URL must be set for the network to fetch this file");
      return source;
    },
  }));
}
