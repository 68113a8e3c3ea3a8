import { dirname, join } from "node:path";
import { generateOpenApiDocument, getPathRegExp, normalizePath } from "trpc-to-openapi";
import type { ZodOpenApiPathsObject } from "zod-openapi";
import pkg from "../../package.json";
import type { AppRouter } from "./router";

const form = (fields: Record<string, string>) => ({
  content: {
    "application/x-www-form-urlencoded": {
      schema: { type: "object" as const, properties: Object.fromEntries(Object.entries(fields).map(([k, d]) => [k, { type: "string" as const, description: d }])) },
    },
  },
});

const signature = {
  name: "X-Twilio-Signature",
  in: "header" as const,
  required: true,
  schema: { type: "string" as const },
  description: "Base64 HMAC-SHA1 of PUBLIC_URL + path and the sorted parameters, keyed by TWILIO_AUTH_TOKEN",
};

/** The provider-facing webhooks of the real networks (not served through tRPC: they are signed, not keyed). */
const NETWORK_WEBHOOKS: Record<string, ZodOpenApiPathsObject> = {
  twilio: {
    "/webhooks/twilio": {
      post: {
        tags: ["webhooks"],
        summary: "Twilio: an inbound SMS",
        security: [],
        parameters: [signature],
        requestBody: form({ MessageSid: "Twilio's message id", From: "sender, E.164", To: "our number", Body: "text", NumMedia: "media count" }),
        responses: { "200": { description: "Empty TwiML", content: { "text/xml": { schema: { type: "string" } } } }, "401": { description: "Bad signature" } },
      },
    },
    "/webhooks/twilio/status": {
      post: {
        tags: ["webhooks"],
        summary: "Twilio: a delivery report (StatusCallback)",
        security: [],
        parameters: [signature],
        requestBody: form({ MessageSid: "Twilio's message id", MessageStatus: "queued, sent, delivered, undelivered, failed…", ErrorCode: "Twilio's error code" }),
        responses: { "204": { description: "Stored" }, "401": { description: "Bad signature" } },
      },
    },
  },
  bluebubbles: {
    "/webhooks/bluebubbles": {
      post: {
        tags: ["webhooks"],
        summary: "BlueBubbles: new and updated messages",
        security: [],
        parameters: [{ name: "secret", in: "query", required: true, schema: { type: "string" }, description: "WEBHOOK_SECRET" }],
        requestBody: {
          content: { "application/json": { schema: { type: "object", properties: { type: { type: "string" }, data: { type: "object" } } } } },
        },
        responses: { "200": { description: "Stored" }, "401": { description: "Wrong secret" } },
      },
    },
  },
};

/** Our error envelope (CONTRACT §4), for the error responses trpc-to-openapi lists with its own shape. */
function errorEnvelope(code: string) {
  return {
    type: "object",
    title: `${code} error`,
    required: ["success", "error"],
    properties: {
      success: { type: "boolean", const: false },
      error: {
        type: "object",
        required: ["code", "message"],
        properties: {
          code: { type: "string", example: code },
          message: { type: "string", description: "What was wrong, naming the field", example: "phone: must be E.164, e.g. +14155550123" },
          issues: {
            type: "array",
            description: "Field by field, for invalid input",
            items: { type: "object", properties: { path: { type: "string" }, message: { type: "string" } } },
          },
        },
      },
    },
  };
}

/** The OpenAPI 3.1 document of every REST route, built once from the router (and the network's webhooks). */
export function buildOpenApiDocument(router: AppRouter, network = "loopback") {
  const doc = generateDocument(router, network);
  const schemas = (doc.components?.schemas ?? {}) as Record<string, unknown>;
  for (const name of Object.keys(schemas)) {
    if (name.startsWith("error.")) schemas[name] = errorEnvelope(name.slice("error.".length));
  }
  return doc;
}

function generateDocument(router: AppRouter, network: string) {
  return generateOpenApiDocument(router, {
    paths: NETWORK_WEBHOOKS[network],
    title: "Textwire",
    version: pkg.version,
    description:
      "Send text messages, read a contact's history, poll for inbound messages. Every route but /health, /openapi.json and /docs needs `Authorization: Bearer <API_KEY>`. Errors are `{ success: false, error: { code, message, issues? } }`.",
    baseUrl: "/",
    securitySchemes: { bearerAuth: { type: "http", scheme: "bearer", description: "An API key" } },
  });
}

export type OpenApiDocument = ReturnType<typeof generateDocument>;

export interface Route {
  method: string;
  pattern: RegExp;
}

/** The REST routes of the document, to answer 404 and 405 before any work. */
export function routeTable(doc: OpenApiDocument): Route[] {
  const routes: Route[] = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of ["get", "post", "put", "patch", "delete"] as const) {
      if (item?.[method]) routes.push({ method: method.toUpperCase(), pattern: getPathRegExp(normalizePath(path)) });
    }
  }
  return routes;
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
  persistAuthorization: true,
  tryItOutEnabled: true,
});
`;

/** `/docs`: Swagger UI from the installed swagger-ui-dist package, no CDN. Null when not a docs path. */
export function docsResponse(path: string): Response | null {
  if (path === "/docs" || path === "/docs/") {
    return new Response(DOCS_PAGE, { headers: { "Content-Type": "text/html; charset=utf-8" } });
  }
  if (path === "/docs/init.js") {
    return new Response(DOCS_INIT, { headers: { "Content-Type": "text/javascript; charset=utf-8" } });
  }
  const asset = DOCS_ASSETS[path];
  if (asset) return new Response(Bun.file(join(SWAGGER_DIR, asset)), { headers: { "Cache-Control": "public, max-age=3600" } });
  return null;
}
