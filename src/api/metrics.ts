import { createHash, timingSafeEqual } from "node:crypto";

const digest = (value: string) => createHash("sha256").update(value).digest();

/** Whether a request may read GET /metrics: METRICS_TOKEN is set and sent as `Authorization: Bearer` (compared in constant time). */
export function scrapeAllowed(req: Request, token: string | undefined): boolean {
  if (!token) return false;
  const given = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(req.headers.get("authorization") ?? "")?.[1];
  return given !== undefined && timingSafeEqual(digest(given), digest(token));
}
