import { join } from "node:path";
import { z } from "zod";
import type { App } from "../app";
import { SESSION_TTL_MS, signIn, signOut } from "../auth/sessions";
import { AppError, parseInput } from "../errors";
import { errorText, type Logger } from "../log";
import { authFailure, checkCsrf, cookieSession, SESSION_COOKIE } from "./auth";
import { createTrustedPeer } from "./client-address";
import type { Context } from "./trpc";

/** The app's entry (src/console/index.html), built in memory on first use. */
const CONSOLE_ENTRYPOINT = join(import.meta.dir, "..", "console", "index.html");
export const CONSOLE_SESSION_PATH = "/console/session";
export const CONSOLE_ASSETS_PREFIX = "/console/assets/";

/** On every console response, errors included: the app loads nothing but its own files. */
const SECURITY_HEADERS: Record<string, string> = {
  "Content-Security-Policy":
    "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "same-origin",
  "X-Frame-Options": "DENY",
};
const NO_STORE = { "Cache-Control": "no-store" };
const IMMUTABLE = { "Cache-Control": "public, max-age=31536000, immutable" };
const NOT_SIGNED_IN = () => new AppError("UNAUTHORIZED", "session: not signed in", { "WWW-Authenticate": "Bearer" });

const signInInput = z.object(
  { key: z.string({ error: "must be a string: the API key" }).min(1, "must not be empty").max(1024, "must be at most 1024 characters") },
  { error: 'must be a JSON object: { "key": "<API_KEY>" }' },
);

/** A built file: its bytes and media type. */
interface BuiltFile {
  bytes: ArrayBuffer;
  type: string;
}

export interface BuiltConsole {
  index: BuiltFile;
  /** By file name under /console/assets/ (hashed names). */
  assets: Map<string, BuiltFile>;
}

/**
 * Builds the app from `entrypoint` in memory, once, on the first call (a cached promise,
 * nothing written to disk). A failed build is logged once and resolves to null: every
 * console page is then a 500, and the server goes on.
 */
export function consoleBuilder(entrypoint: string, log: Logger): () => Promise<BuiltConsole | null> {
  let built: Promise<BuiltConsole | null> | undefined;
  const build = async (): Promise<BuiltConsole | null> => {
    const started = performance.now();
    try {
      const result = await Bun.build({
        entrypoints: [entrypoint],
        target: "browser",
        minify: true,
        publicPath: CONSOLE_ASSETS_PREFIX,
        define: { "process.env.NODE_ENV": '"production"' },
      });
      if (!result.success) throw new AggregateError(result.logs, "the build reported errors");
      let index: BuiltFile | undefined;
      const assets = new Map<string, BuiltFile>();
      for (const output of result.outputs) {
        const file = { bytes: await output.arrayBuffer(), type: output.type };
        const name = output.path.replace(/^\.\//, "");
        if (name.endsWith(".html")) index = file;
        else assets.set(name, file);
      }
      if (!index) throw new Error("the build produced no index.html");
      log.info("built the console", { ms: Math.round(performance.now() - started), assets: assets.size });
      return { index, assets };
    } catch (err) {
      const logs = err instanceof AggregateError ? err.errors.map(errorText) : [];
      log.error("the console failed to build; /console answers 500", { error: errorText(err), ...(logs.length ? { logs } : {}) });
      return null;
    }
  };
  return () => (built ??= build());
}

/**
 * Which origins are the server's own, and whether a request came over HTTPS: the request
 * URL's (its Host header), PUBLIC_URL's, and behind a TRUSTED_PROXIES peer that says
 * `X-Forwarded-Proto: https`, the same host over https.
 */
export function createOrigins(config: App["config"]) {
  const trustedPeer = createTrustedPeer(config.TRUSTED_PROXIES);
  const publicOrigin = config.PUBLIC_URL ? new URL(config.PUBLIC_URL).origin : undefined;
  const forwardedHttps = (req: Request, peer: string) =>
    req.headers.get("x-forwarded-proto")?.split(",")[0]?.trim().toLowerCase() === "https" && trustedPeer(peer);
  return {
    isOwn(origin: string, req: Request, url: URL, peer: string): boolean {
      return origin === url.origin || origin === publicOrigin || (origin === `https://${url.host}` && forwardedHttps(req, peer));
    },
    overHttps(req: Request, url: URL, peer: string): boolean {
      return url.protocol === "https:" || publicOrigin?.startsWith("https:") === true || forwardedHttps(req, peer);
    },
  };
}
export type Origins = ReturnType<typeof createOrigins>;

type Handler = (req: Request, url: URL, ctx: Context) => Promise<Response>;

export interface ConsoleRoutes {
  /** POST /console/session: sign in with `{ "key" }`. */
  signIn: Handler;
  /** GET /console/session: the live session's CSRF token and expiry, or 401. */
  session: Handler;
  /** DELETE /console/session: sign out (CSRF checked). */
  signOut: Handler;
  /** GET /console/assets/<file>: the built JS and CSS. */
  asset: Handler;
  /** GET /console and every other path under it: the app's index.html (client-side routes). */
  page: Handler;
}

/** The console's HTTP face (docs/api.md "Console sessions"): sessions and the built app. */
export function createConsoleRoutes(app: App, origins: Origins, readJson: (req: Request) => Promise<unknown>): ConsoleRoutes {
  const built = consoleBuilder(CONSOLE_ENTRYPOINT, app.log);

  /** `Set-Cookie` for the session token; an empty token with Max-Age=0 clears it. */
  const cookie = (req: Request, url: URL, ctx: Context, token: string, maxAgeS: number) =>
    `${SESSION_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeS}${origins.overHttps(req, url, ctx.peer) ? "; Secure" : ""}`;

  const secured = (ctx: Context, extra: Record<string, string> = {}) => Object.assign(ctx.responseHeaders, SECURITY_HEADERS, extra);

  const builtOr500 = async () => {
    const result = await built();
    if (!result) throw new AppError("INTERNAL_SERVER_ERROR", "console: the app failed to build; the server log says why");
    return result;
  };

  const fileResponse = (file: BuiltFile, headers: Record<string, string>) =>
    new Response(file.bytes, { headers: { "Content-Type": file.type, ...headers } });

  return {
    async signIn(req, url, ctx) {
      secured(ctx, NO_STORE);
      const origin = req.headers.get("origin");
      if (origin !== null && !origins.isOwn(origin, req, url, ctx.peer)) throw new AppError("FORBIDDEN", "origin: not this server's own origin");
      const { key } = parseInput(signInInput, await readJson(req));
      let session;
      try {
        session = await signIn(app, key);
      } catch (err) {
        throw err instanceof AppError && err.code === "UNAUTHORIZED" ? authFailure(app, ctx.ip, err) : err;
      }
      return Response.json(
        { csrf_token: session.csrfToken, expires_at: session.expiresAt },
        { headers: { "Set-Cookie": cookie(req, url, ctx, session.token, SESSION_TTL_MS / 1000) } },
      );
    },

    async session(req, _url, ctx) {
      secured(ctx, NO_STORE);
      const session = await cookieSession(app, req, ctx.ip);
      if (!session) throw NOT_SIGNED_IN();
      return Response.json({ csrf_token: session.csrfToken, expires_at: session.expiresAt });
    },

    async signOut(req, url, ctx) {
      secured(ctx, NO_STORE);
      const session = await cookieSession(app, req, ctx.ip);
      if (!session) throw NOT_SIGNED_IN();
      checkCsrf(req, session, (origin) => origins.isOwn(origin, req, url, ctx.peer));
      await signOut(app, session.token);
      return new Response(null, { status: 204, headers: { "Set-Cookie": cookie(req, url, ctx, "", 0) } });
    },

    async asset(_req, url, ctx) {
      secured(ctx);
      const name = url.pathname.slice(CONSOLE_ASSETS_PREFIX.length);
      const file = (await builtOr500()).assets.get(name);
      if (!file) throw new AppError("NOT_FOUND", `no console asset named "${name}"`);
      return fileResponse(file, IMMUTABLE);
    },

    async page(_req, _url, ctx) {
      secured(ctx);
      return fileResponse((await builtOr500()).index, NO_STORE);
    },
  };
}
