import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { NetworkStateRepository } from "../db/port";

/**
 * Signed, expiring URLs of media (`/media/:id?expires=&sig=`), for a network that fetches the
 * files itself (Twilio's MediaUrl) and holds no API key. The signature is HMAC-SHA256 over
 * `<id>.<expires>` with MEDIA_URL_SECRET, or else a random secret made once and kept in the
 * database, so every process sharing the database signs and checks alike.
 */

/** How long a signed URL works: Twilio may keep a message queued for hours before it fetches. */
export const SIGNED_URL_TTL_S = 24 * 60 * 60;

/** The furthest ahead a signed link may expire: a link signed for later (a leaked secret, an old signer) is refused. */
export const MAX_SIGNED_URL_S = 7 * 24 * 60 * 60;

const STATE_NETWORK = "textwire";
const STATE_KEY = "media-url-secret";

/** The signing secret: MEDIA_URL_SECRET, else the database's (created on first use). */
export function mediaUrlSecret(configured: string | undefined, state: NetworkStateRepository): () => Promise<string> {
  if (configured) return async () => configured;
  let known: string | undefined;
  return async () => {
    if (known) return known;
    let secret = await state.get(STATE_NETWORK, STATE_KEY);
    if (!secret) {
      await state.set(STATE_NETWORK, STATE_KEY, randomBytes(32).toString("base64url"));
      // Read back: when two processes made one at once, the one stored is the one all use.
      secret = (await state.get(STATE_NETWORK, STATE_KEY))!;
    }
    known = secret;
    return secret;
  };
}

const sign = (secret: string, id: string, expires: number) => createHmac("sha256", secret).update(`${id}.${expires}`).digest("hex");

/** `<publicUrl>/media/<id>?expires=…&sig=…`, valid for SIGNED_URL_TTL_S from `nowMs`. */
export function signedMediaUrl(publicUrl: string, secret: string, id: string, nowMs = Date.now()): string {
  const expires = Math.floor(nowMs / 1000) + SIGNED_URL_TTL_S;
  return `${publicUrl.replace(/\/+$/, "")}/media/${encodeURIComponent(id)}?expires=${expires}&sig=${sign(secret, id, expires)}`;
}

/** Why this signed request is refused (`forged`, `expired`, or `too_far`: expiring more than 7 days ahead), or null when it stands. */
export function signedUrlProblem(secret: string, id: string, query: URLSearchParams, nowMs = Date.now()): "forged" | "expired" | "too_far" | null {
  const expires = query.get("expires") ?? "";
  const given = Buffer.from(query.get("sig") ?? "");
  if (!/^\d{1,12}$/.test(expires)) return "forged";
  if (Number(expires) * 1000 > nowMs + MAX_SIGNED_URL_S * 1000) return "too_far";
  const expected = Buffer.from(sign(secret, id, Number(expires)));
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return "forged";
  return Number(expires) * 1000 < nowMs ? "expired" : null;
}
