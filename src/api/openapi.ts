import { dirname, join } from "node:path";
import { generateOpenApiDocument, getPathRegExp, normalizePath } from "trpc-to-openapi";
import pkg from "../../package.json";
import type { AppRouter } from "./router";

/** The OpenAPI 3.1 document of every REST route, built once from the router. */
export function buildOpenApiDocument(router: AppRouter) {
  return generateOpenApiDocument(router, {
    title: "Textwire",
    version: pkg.version,
    description:
      "Send text messages, read a contact's history, poll for inbound messages. Every route but /health, /openapi.json and /docs needs `Authorization: Bearer <API_KEY>`. Errors are `{ success: false, error: { code, message, issues? } }`.",
    baseUrl: "/",
    securitySchemes: { bearerAuth: { type: "http", scheme: "bearer", description: "An API key" } },
  });
}

export type OpenApiDocument = ReturnType<typeof buildOpenApiDocument>;

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
