import { dirname, join } from "node:path";
import { generateOpenApiDocument, normalizePath } from "trpc-to-openapi";
import pkg from "../../package.json";
import { CODE_OF_STATUS, HTTP_STATUS } from "./errors";
import { restProcedures } from "./rest";
import type { AppRouter } from "./router";

type Json = Record<string, unknown>;

const ref = (kind: "headers" | "schemas", name: string) => ({ $ref: `#/components/${kind}/${name}` });

/** Every response header Textwire sends, described once (docs/api.md). */
const HEADERS: Record<string, Json> = {
  "X-Request-Id": {
    description: "This request's id, on every response; the server's log line for the request carries the same id.",
    schema: { type: "string", example: "019ab3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b" },
  },
  "RateLimit-Limit": {
    description: "Requests the API key may make at once (RATE_LIMIT_BURST). Sent once the key is accepted, when rate limiting is on.",
    schema: { type: "integer", minimum: 1, example: 60 },
  },
  "RateLimit-Remaining": {
    description: "Requests the API key has left right now. Sent once the key is accepted, when rate limiting is on.",
    schema: { type: "integer", minimum: 0, example: 59 },
  },
  "RateLimit-Reset": {
    description: "Seconds until the key's allowance is full again. Sent once the key is accepted, when rate limiting is on.",
    schema: { type: "integer", minimum: 0, example: 1 },
  },
  "Retry-After": {
    description: "Whole seconds to wait before trying again, at least 1.",
    required: true,
    schema: { type: "integer", minimum: 1, example: 1 },
  },
  "WWW-Authenticate": {
    description: "The scheme to authenticate with: `Bearer`.",
    required: true,
    schema: { type: "string", const: "Bearer" },
  },
  Allow: {
    description: "The methods this path serves, comma-separated.",
    required: true,
    schema: { type: "string", example: "POST" },
  },
  "Idempotent-Replayed": {
    description: "`true` when this is the stored answer to an earlier request with the same `Idempotency-Key`: nothing new was sent.",
    schema: { type: "string", const: "true" },
  },
};

/** The error envelope: one shape for every error of every route (src/api/errors.ts). */
function errorEnvelope(description: string, required: string[]): Json {
  return {
    type: "object",
    description,
    required: ["success", "error"],
    properties: {
      success: { type: "boolean", const: false },
      error: {
        type: "object",
        required: ["code", "message", ...required],
        properties: {
          code: ref("schemas", "ErrorCode"),
          message: { type: "string", description: "What was wrong, naming the field.", example: "phone: must be E.164, e.g. +14155550123" },
          issues: {
            type: "array",
            description: "Invalid input, field by field.",
            items: {
              type: "object",
              required: ["path", "message"],
              properties: {
                path: { type: "string", description: "The field, dotted (`context.0.role`), or `body` for the whole body.", example: "phone" },
                message: { type: "string", example: "must be E.164, e.g. +14155550123" },
              },
            },
          },
          message_id: { type: "string", description: "On 504 GATEWAY_TIMEOUT: the stored message whose outcome is not known yet." },
        },
      },
    },
  };
}

const ERROR_SCHEMAS: Record<string, Json> = {
  ErrorCode: {
    type: "string",
    description: "What went wrong, one code per HTTP status.",
    enum: Object.keys(HTTP_STATUS),
  },
  Error: errorEnvelope("The error envelope of every error response.", []),
  GatewayTimeoutError: errorEnvelope(
    "504 GATEWAY_TIMEOUT: the network did not say in time whether it took the message. The message may still go out: its record (`message_id`) keeps a non-final status until the network's report settles it, and a retry with the same Idempotency-Key answers from that record without sending again.",
    ["message_id"],
  ),
};

/** What each error status means when a route does not say more. */
const ERROR_TEXT: Record<number, [description: string, example: string]> = {
  400: ["Invalid input: `message` names the field, `issues` lists each one. Also malformed JSON.", "phone: must be E.164, e.g. +14155550123"],
  401: ["Missing, invalid, revoked or expired API key.", "authorization: invalid API key"],
  403: ["Not allowed: the key lacks the scope this route needs, or one of its limits refuses the request (docs/security.md); `message` names what is missing. Nothing changed.", "scope: this key lacks messages:send"],
  404: ["No such route.", "no route POST /webhooks/twilio/other"],
  405: ["This path does not serve the method; `Allow` lists those it does.", "method PUT not allowed on /api/send; use POST"],
  409: [
    "The `Idempotency-Key` was used with a different body, or its first request is still running.",
    "idempotency-key: already used with a different request",
  ],
  413: ["Body larger than 1 MiB.", "body: larger than 1048576 bytes"],
  415: ["Body not `application/json` (parameters such as `charset=utf-8` are fine).", "content-type: must be application/json (got text/plain)"],
  416: ["The `Range` asks for bytes the file does not have; `Content-Range: bytes */<size>` says its size.", "range: outside the file's 5120 bytes"],
  422: ["The network cannot do this (see GET /api/network): `message` names the field and the network; nothing changed.", "reaction: the twilio network cannot send reactions"],
  429: [
    "Too many requests: the key's rate limit, or too many failed authentications from this address. Wait `Retry-After` seconds.",
    "rate limit exceeded; retry in 1 s",
  ],
  500: ["Unexpected failure; the request may be retried later.", "internal error; the request may be retried later"],
  502: ["The messaging network or the generator failed.", "network: unreachable"],
  503: [
    "A dependency is not available: the database is unreachable or busy (with `Retry-After`; nothing was stored, retry), or, on generate, no generator is configured.",
    "database: unavailable or busy; retry later",
  ],
  504: ["The network did not answer in time: the outcome is unknown.", "network: no answer in time; the status will follow"],
};

/**
 * One error response: the envelope, its code, and the headers it carries. `keyed`: on a
 * route behind an API key (the rate-limit headers once the key is accepted, WWW-Authenticate on 401).
 */
function documentedError(status: number, description: string | undefined, keyed: boolean): Json {
  const code = CODE_OF_STATUS.get(status);
  const text = ERROR_TEXT[status];
  if (!code || !text) throw new Error(`openapi: no error code answers HTTP ${status}`);
  const headers: Json = { "X-Request-Id": ref("headers", "X-Request-Id") };
  // Sent once the key is accepted: a 404 of a route (no such endpoint) has them, a 401 or 405 never.
  if (keyed && status !== 401 && status !== 405) {
    for (const name of ["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"]) headers[name] = ref("headers", name);
  }
  if (status === 429) headers["Retry-After"] = ref("headers", "Retry-After");
  // Only when the database is the cause (the generator's 503 has none).
  if (status === 503) headers["Retry-After"] = { ...HEADERS["Retry-After"], required: false, description: "On a database that is unreachable or busy: whole seconds to wait before retrying." };
  if (status === 401 && keyed) headers["WWW-Authenticate"] = ref("headers", "WWW-Authenticate");
  if (status === 405) headers.Allow = ref("headers", "Allow");
  const schema = status === 504 ? ref("schemas", "GatewayTimeoutError") : ref("schemas", "Error");
  const error: Json = { code, message: text[1] };
  if (status === 504) error.message_id = "019ab3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b";
  return {
    description: `${code}. ${description ?? text[0]}`,
    headers,
    content: { "application/json": { schema, example: { success: false, error } } },
  };
}

const REQUEST_ID = { "X-Request-Id": ref("headers", "X-Request-Id") };

const form = (fields: Record<string, string>, description: string) => ({
  required: true,
  description,
  content: {
    "application/x-www-form-urlencoded": {
      schema: {
        type: "object",
        properties: Object.fromEntries(Object.entries(fields).map(([k, d]) => [k, { type: "string", description: d }])),
        additionalProperties: { type: "string" },
      },
    },
  },
});

const twilioSignature = {
  name: "X-Twilio-Signature",
  in: "header",
  required: true,
  schema: { type: "string" },
  description: "Base64 HMAC-SHA1, keyed by TWILIO_AUTH_TOKEN, of PUBLIC_URL + the path and query, followed by every form field's name and value sorted by name. A wrong or missing one is 401.",
};

/** The statuses every network webhook answers besides its own (its body is read as UTF-8, at most 1 MiB). */
const webhookErrors = (extra: Record<number, string>) => ({
  ...Object.fromEntries(Object.entries(extra).map(([s, d]) => [s, documentedError(Number(s), d, false)])),
  "405": documentedError(405, "Only POST.", false),
  "413": documentedError(413, undefined, false),
  "500": documentedError(500, undefined, false),
  "503": documentedError(503, undefined, false),
});

/** The provider-facing webhooks of the real networks (not served through tRPC: they are signed, not keyed). */
const NETWORK_WEBHOOKS: Record<string, Json> = {
  twilio: {
    "/webhooks/twilio": {
      post: {
        operationId: "webhooks-twilio",
        tags: ["webhooks"],
        summary: "Twilio: an inbound message",
        description:
          "Set as the number's (or Messaging Service's) incoming message webhook. Stores an inbound message when the form has MessageSid (or SmsSid), From and a Body or media (NumMedia above 0); the same MessageSid twice stores one message. Any other field Twilio sends is signed and ignored.",
        security: [],
        parameters: [twilioSignature],
        requestBody: form(
          {
            MessageSid: "Twilio's id of the message (SmsSid is read when it is missing).",
            SmsSid: "Older name of MessageSid.",
            From: "The sender, E.164.",
            To: "Our number.",
            Body: "The text.",
            NumMedia: "How many media files came with it, at MediaUrl0… (typed by MediaContentType0…): each is downloaded with the account's credentials and kept; a message with media and no text has empty text.",
          },
          "Twilio's webhook form, any content type (the body is read as a form).",
        ),
        responses: {
          "200": {
            description: "Taken (or ignored when it holds no message): an empty TwiML response, so Twilio sends no reply.",
            headers: REQUEST_ID,
            content: { "text/xml": { schema: { type: "string" }, example: '<?xml version="1.0" encoding="UTF-8"?><Response></Response>' } },
          },
          ...webhookErrors({ 400: "Body not valid UTF-8.", 401: "X-Twilio-Signature missing or wrong." }),
        },
      },
    },
    "/webhooks/twilio/status": {
      post: {
        operationId: "webhooks-twilio-status",
        tags: ["webhooks"],
        summary: "Twilio: a delivery report (StatusCallback)",
        description: "Textwire sets this URL, with `?id=`, as each sent message's StatusCallback. A final status (delivered, failed) is never changed by a later report.",
        security: [],
        parameters: [
          twilioSignature,
          { name: "id", in: "query", required: false, schema: { type: "string" }, description: "Textwire's id of the message, put in the callback URL when it was sent." },
        ],
        requestBody: form(
          {
            MessageSid: "Twilio's id of the message (SmsSid is read when it is missing).",
            SmsSid: "Older name of MessageSid.",
            MessageStatus: "queued, sending, sent, delivered, read, undelivered, failed, canceled… (SmsStatus is read when it is missing).",
            SmsStatus: "Older name of MessageStatus.",
            ErrorCode: "Twilio's error code, kept as the message's error.",
          },
          "Twilio's status callback form.",
        ),
        responses: {
          "204": { description: "Taken.", headers: REQUEST_ID },
          ...webhookErrors({ 400: "Body not valid UTF-8.", 401: "X-Twilio-Signature missing or wrong." }),
        },
      },
    },
  },
  bluebubbles: {
    "/webhooks/bluebubbles": {
      post: {
        operationId: "webhooks-bluebubbles",
        tags: ["webhooks"],
        summary: "BlueBubbles: new and updated messages",
        description:
          "Set as a webhook of the BlueBubbles server. `new-message` events from others are stored as inbound messages; `new-message`, `updated-message` and `message-send-error` events about ours are delivery reports. Other events are taken and ignored.",
        security: [],
        parameters: [{ name: "secret", in: "query", required: true, schema: { type: "string" }, description: "WEBHOOK_SECRET; a wrong or missing one is 401." }],
        requestBody: {
          required: true,
          content: {
            "application/json": {
              schema: {
                type: "object",
                properties: {
                  type: { type: "string", description: "The event: new-message, updated-message, message-send-error, …", example: "new-message" },
                  data: { type: "object", description: "The BlueBubbles message (guid, text, isFromMe, handle.address, dateCreated, dateDelivered, error, tempGuid)." },
                },
              },
            },
          },
        },
        responses: {
          "200": {
            description: "Taken (or ignored).",
            headers: REQUEST_ID,
            content: { "application/json": { schema: { type: "object", required: ["success"], properties: { success: { type: "boolean", const: true } } } } },
          },
          ...webhookErrors({ 400: "Malformed JSON, or a body that is not UTF-8.", 401: "secret missing or wrong." }),
        },
      },
    },
  },
};

/** The bytes of a kept file, whole or one range (src/api/media.ts). */
const mediaOperation = (method: "get" | "head", signed: boolean) => {
  const body = method === "get";
  const bytes = (description: string) => (body ? { content: { "*/*": { schema: { type: "string", contentMediaType: "application/octet-stream" } } }, description } : { description });
  const fileHeaders = {
    ...REQUEST_ID,
    "Content-Type": { description: "The file's type, as fetched (or sniffed from its first bytes).", schema: { type: "string", example: "image/jpeg" } },
    "Content-Length": { description: "Bytes in this response.", schema: { type: "integer", minimum: 0 } },
    "Accept-Ranges": { description: "Ranges are answered.", schema: { type: "string", const: "bytes" } },
    ETag: { description: "The file's validator: its bytes never change.", schema: { type: "string", example: '"med_5b1e0c9d8a7f4e3b2c1d0e9f8a7b6c5d"' } },
  };
  const keyed = !signed;
  const range = {
    name: "Range",
    in: "header",
    required: false,
    schema: { type: "string", example: "bytes=0-1023" },
    description: "One byte range: `bytes=a-b`, `bytes=a-` or `bytes=-n` (the last n bytes). Anything else is ignored and the whole file is sent.",
  };
  const id = { name: "id", in: "path", required: true, schema: { type: "string", pattern: "^med_[0-9a-f]{32}$" }, description: "The media id, from a message record's `media`." };
  const parameters: Json[] = [id, range];
  if (signed) {
    parameters.push(
      { name: "expires", in: "query", required: true, schema: { type: "integer" }, description: "Unix seconds after which the link no longer works." },
      { name: "sig", in: "query", required: true, schema: { type: "string" }, description: "Hex HMAC-SHA256 of `<id>.<expires>` with the server's media URL secret." },
    );
  }
  return {
    operationId: `${signed ? "signed-media" : "media"}${body ? "" : "-head"}`,
    tags: ["messages"],
    summary: signed ? `A media file by signed link${body ? "" : " (headers only)"}` : `A media file's bytes${body ? "" : " (headers only)"}`,
    description: signed
      ? "No API key: the link itself is the permission. Textwire gives such links to networks that fetch files themselves (Twilio's MediaUrl); they expire after 24 hours."
      : "The bytes of one file of a message (`media[].url` of its record). `Range` is answered with 206.",
    security: signed ? [] : [{ bearerAuth: [] }],
    parameters,
    responses: {
      "200": { ...bytes("The whole file."), headers: fileHeaders },
      "206": { ...bytes("The range asked for."), headers: { ...fileHeaders, "Content-Range": { description: "`bytes a-b/size`.", schema: { type: "string", example: "bytes 0-1023/52311" } } } },
      "304": { description: "`If-None-Match` names this file's ETag: the copy the client has is current.", headers: REQUEST_ID },
      ...(keyed ? { "401": documentedError(401, undefined, true) } : { "403": documentedError(403, "`sig` missing or wrong, or the link expired.", false) }),
      "404": documentedError(404, "No media with this id.", keyed),
      "405": documentedError(405, "Only GET and HEAD.", false),
      "416": documentedError(416, undefined, keyed),
      ...(keyed ? { "429": documentedError(429, undefined, true) } : {}),
      "500": documentedError(500, undefined, keyed),
      "503": documentedError(503, undefined, keyed),
    },
  };
};

const MEDIA_PATHS = {
  "/api/media/{id}": { get: mediaOperation("get", false), head: mediaOperation("head", false) },
  "/media/{id}": { get: mediaOperation("get", true), head: mediaOperation("head", true) },
};

const HEALTH_STATUS = {
  type: "object",
  required: ["status"],
  properties: {
    status: { type: "string", enum: ["ok", "unavailable"] },
    reason: { type: "string", enum: ["database", "shutting down"], description: "What is unavailable: the database, or the process (readiness only)." },
  },
};

/** The three probes (docs/operations.md#liveness-and-readiness): what each checks, and its 503s. */
const PROBES = {
  health: { summary: "Is the service up", description: "200 when the database takes a write within 2 s, else 503; never waits longer than 2 s.", unavailable: ["database"] },
  live: { summary: "Does the process answer (liveness)", description: "200 whenever the process answers; it reads nothing.", unavailable: [] },
  ready: {
    summary: "Should traffic come here (readiness)",
    description: "200 when the database takes a write within 2 s; 503 when it does not, and from the moment a shutdown begins (the drain, SHUTDOWN_DRAIN_MS).",
    unavailable: ["database", "shutting down"],
  },
} as const;

const healthOperation = (probe: keyof typeof PROBES, method: "get" | "head") => {
  const { summary, description, unavailable } = PROBES[probe];
  const body = method === "get";
  const content = (example: Json) => (body ? { content: { "application/json": { schema: ref("schemas", "Health"), example } } } : {});
  return {
    operationId: `${probe}${method === "get" ? "" : "-head"}`,
    tags: ["health"],
    summary: method === "get" ? summary : `${summary} (headers only)`,
    description: `No API key. ${description}`,
    security: [],
    responses: {
      "200": { description: "Up.", headers: REQUEST_ID, ...content({ status: "ok" }) },
      "405": documentedError(405, "Only GET and HEAD.", false),
      ...(unavailable.length
        ? { "503": { description: `Unavailable: ${unavailable.join(", or ")}.`, headers: REQUEST_ID, ...content({ status: "unavailable", reason: unavailable[0] }) } }
        : {}),
    },
  };
};
const healthPath = (probe: keyof typeof PROBES) => ({ get: healthOperation(probe, "get"), head: healthOperation(probe, "head") });

const TAGS = [
  { name: "messages", description: "Send, read history, poll, generate." },
  { name: "chats", description: "Conversations: each contact's direct chat and the group chats; creating, renaming and changing groups." },
  { name: "contacts", description: "Contacts' opt-out state (STOP and START), unread messages and typing; our typing and read marks to them." },
  { name: "network", description: "The messaging network and what it can do." },
  { name: "lines", description: "The deployment's lines: numbers and accounts on the networks, with routing between them (docs/lines.md)." },
  { name: "webhooks", description: "Inbound messages and delivery reports from the messaging network." },
  { name: "webhook-endpoints", description: "Outbound webhooks: where Textwire POSTs its events, signed (docs/webhooks.md)." },
  { name: "events", description: "What happened, oldest first: the events webhook endpoints get, to read with a cursor." },
  { name: "keys", description: "API keys with their scopes and limits (docs/security.md); every route needs keys:manage." },
  { name: "health", description: "Health, liveness and readiness for load balancers and orchestrators." },
];

/** Every line's own webhook (docs/lines.md), whatever its network: the body is that network's. */
const LINE_WEBHOOKS: Record<string, Json> = {
  "/webhooks/lines/{id}": {
    post: {
      operationId: "webhooks-line",
      tags: ["webhooks"],
      summary: "A line's network: inbound messages and delivery reports",
      description:
        "The `webhook_url` of a line added through /api/lines: its network posts here as it posts to `/webhooks/{network}` for the environment's line (Twilio's form, with `/status` for delivery reports; BlueBubbles' JSON with `?secret=`; SMS Gateway for Android's signed JSON), checked with that line's own credentials. What it reports is stored on that line.",
      security: [],
      parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" }, description: "The line's id (`ln_…`)." }],
      requestBody: { required: true, content: { "application/json": { schema: { type: "object" } }, "application/x-www-form-urlencoded": { schema: { type: "object" } } } },
      responses: {
        "200": { description: "Taken (or ignored), answered as the line's network expects.", headers: REQUEST_ID },
        ...webhookErrors({ 400: "A body the network's format does not allow.", 401: "The signature, secret or timestamp is missing or wrong for this line.", 404: "No line with this id, or its network posts no webhooks (loopback).", 429: "Too many failed signatures from this address." }),
      },
    },
  },
};

/** The OpenAPI 3.1 document of every REST route, built once from the router (and the network's webhooks). */
export function buildOpenApiDocument(router: AppRouter, network = "loopback") {
  const doc = generateDocument(router, network);
  const paths = (doc.paths ?? {}) as Record<string, Record<string, Json>>;
  // trpc-to-openapi's error responses have its own shape and no headers: ours replace them.
  for (const { openapi: meta, successStatus } of restProcedures(router)) {
    const op = paths[normalizePath(meta.path)]?.[meta.method.toLowerCase()];
    if (!op) continue;
    const success = (op.responses as Record<string, Json>)["200"]!;
    const listed = meta.errorResponses ?? [];
    const errors: Record<number, string> = Array.isArray(listed) ? Object.fromEntries(listed.map((s) => [s, ""])) : { ...listed };
    // Every route reads or writes the database, which may be unreachable or busy.
    errors[503] ??= "";
    const keyed = meta.protect !== false;
    success.headers = {
      ...REQUEST_ID,
      ...(keyed ? Object.fromEntries(["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"].map((h) => [h, ref("headers", h)])) : {}),
      ...(meta.requestHeaders?.shape["Idempotency-Key"] ? { "Idempotent-Replayed": ref("headers", "Idempotent-Replayed") } : {}),
    };
    op.responses = {
      [successStatus]: success,
      ...Object.fromEntries(Object.entries(errors).map(([status, text]) => [status, documentedError(Number(status), text || undefined, keyed)])),
    };
    // A body that takes exactly one of two fields (phone or chat_id) says so; zod's refinement does not show.
    const body = ((op.requestBody as Json | undefined)?.content as Json | undefined)?.["application/json"] as Json | undefined;
    const properties = ((body?.schema as Json | undefined)?.properties ?? {}) as Json;
    if (body && "phone" in properties && "chat_id" in properties) {
      const schema = body.schema as Json;
      schema.required = ((schema.required ?? []) as string[]).filter((f) => f !== "phone" && f !== "chat_id");
      schema.oneOf = [{ required: ["phone"] }, { required: ["chat_id"] }];
    }
    for (const param of (op.parameters ?? []) as Json[]) {
      const schema = param.schema as Json | undefined;
      if (!param.description && typeof schema?.description === "string") param.description = schema.description;
    }
  }
  Object.assign(paths, MEDIA_PATHS, { "/health": healthPath("health"), "/health/live": healthPath("live"), "/health/ready": healthPath("ready") }, NETWORK_WEBHOOKS[network] ?? {}, LINE_WEBHOOKS);
  const components = (doc.components ?? {}) as Json;
  const schemas = Object.fromEntries(Object.entries((components.schemas ?? {}) as Json).filter(([name]) => !name.startsWith("error.")));
  components.schemas = { ...schemas, ...ERROR_SCHEMAS, Health: HEALTH_STATUS };
  components.headers = HEADERS;
  doc.components = components;
  doc.tags = TAGS;
  return doc;
}

function generateDocument(router: AppRouter, network: string) {
  return generateOpenApiDocument(router, {
    // A network's webhook route (/webhooks/<network>) exists only on that network.
    filter: ({ metadata }) => {
      const webhook = /^\/webhooks\/([^/]+)/.exec(metadata.openapi?.path ?? "");
      return !webhook || webhook[1] === network;
    },
    title: "Textwire",
    version: pkg.version,
    description:
      "Send text messages, read a contact's history, poll for inbound messages, generate replies. Every route needs `Authorization: Bearer <API_KEY>` but these: /health, /health/live, /health/ready, /metrics (its own METRICS_TOKEN), /openapi.json, /docs, the console's page /console, signed media links /media/:id and the networks' signed webhooks. Every error is `{ success: false, error: { code, message, issues? } }` with an `X-Request-Id` header; a path not listed here is 404 NOT_FOUND, a method a path does not serve is 405 with `Allow`.",
    baseUrl: "/",
    securitySchemes: { bearerAuth: { type: "http", scheme: "bearer", description: "An API key: `Authorization: Bearer <API_KEY>` (the scheme word is case-insensitive)." } },
  });
}

const SWAGGER_DIR = dirname(Bun.resolveSync("swagger-ui-dist/package.json", import.meta.dir));
const DOCS_ASSETS: Record<string, string> = {
  "/docs/swagger-ui.css": "swagger-ui.css",
  "/docs/swagger-ui-bundle.js": "swagger-ui-bundle.js",
  "/docs/favicon-32x32.png": "favicon-32x32.png",
};

const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Textwire API reference</title>
  <link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
  <link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
  <div id="reference"></div>
  <script src="/docs/swagger-ui-bundle.js"></script>
  <script src="/docs/init.js"></script>
</body>
</html>
`;

const DOCS_INIT = `window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#reference",
  deepLinking: true,
  // The key typed into "Authorize" stays in this page's memory, never in localStorage (docs/security.md).
  persistAuthorization: false,
  tryItOutEnabled: true,
});
`;

/**
 * On every /docs response, as /console has its own: the page loads only this server's files
 * and cannot be framed. Swagger UI sets inline styles, so styles may be inline; scripts may not.
 */
const DOCS_HEADERS: Record<string, string> = {
  "Content-Security-Policy":
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "same-origin",
  "X-Frame-Options": "DENY",
};

/** `/docs`: Swagger UI from the installed swagger-ui-dist package, no CDN. Null when not a docs path. */
export function docsResponse(path: string): Response | null {
  if (path === "/docs" || path === "/docs/") {
    return new Response(DOCS_PAGE, { headers: { "Content-Type": "text/html; charset=utf-8", ...DOCS_HEADERS } });
  }
  if (path === "/docs/init.js") {
    return new Response(DOCS_INIT, { headers: { "Content-Type": "text/javascript; charset=utf-8", ...DOCS_HEADERS } });
  }
  const asset = DOCS_ASSETS[path];
  if (asset) return new Response(Bun.file(join(SWAGGER_DIR, asset)), { headers: { "Cache-Control": "public, max-age=3600", ...DOCS_HEADERS } });
  return null;
}
