import type { App } from "../app";
import { errorText } from "../log";
import { errorResponse, failureOf, methodNotAllowed, noRoute } from "./errors";
import { checkHealth, checkReadiness } from "./health";
import { scrapeAllowed } from "./metrics";

/** One operations route: a path served to GET (and HEAD) without an API key. */
export interface OperationsRoute {
  path: string;
  get(req: Request, url: URL): Promise<Response>;
}

/**
 * Health, liveness, readiness and metrics (docs/operations.md): served by the API's routing
 * table (src/api/http.ts) and, in a worker with WORKER_PORT, by the worker's own listener
 * (createOperationsHandler), with the same answers. `stopping` is true once a shutdown began.
 */
export function operationsRoutes(app: App, stopping: () => boolean): OperationsRoute[] {
  const { metrics } = app;
  const asStatus = (health: { status: string }) => Response.json(health, { status: health.status === "ok" ? 200 : 503 });
  return [
    { path: "/health", get: async () => asStatus(await checkHealth(app)) },
    { path: "/health/live", get: async () => Response.json({ status: "ok" }) },
    { path: "/health/ready", get: async () => asStatus(await checkReadiness(app, stopping())) },
    // Only when metrics are kept (METRICS_TOKEN); anyone without the token gets the answer of
    // a path with no route: the endpoint is not shown.
    ...(metrics
      ? [{
          path: "/metrics",
          get: async (req: Request, url: URL) => {
            if (!scrapeAllowed(req, app.config.METRICS_TOKEN)) return noRoute(req.method, url.pathname);
            return new Response(await metrics.scrape(), { headers: { "Content-Type": metrics.contentType } });
          },
        }]
      : []),
  ];
}

/** The metrics label of a path no route serves, in the API and the worker alike. */
export const UNMATCHED = "unmatched";
const ALLOW = "GET, HEAD";

/**
 * The worker's listener (WORKER_PORT): the operations routes and nothing else, apart from
 * the API's router (no REST, tRPC or console). Any other path is the API's 404.
 */
export function createOperationsHandler(app: App, stopping: () => boolean): (req: Request) => Promise<Response> {
  const routes = new Map(operationsRoutes(app, stopping).map((r) => [r.path, r]));
  async function serve(req: Request, url: URL, row: OperationsRoute | undefined): Promise<Response> {
    if (!row) return noRoute(req.method, url.pathname);
    if (req.method !== "GET" && req.method !== "HEAD") return methodNotAllowed(req.method, url.pathname, ALLOW);
    try {
      return await row.get(req, url);
    } catch (err) {
      const failure = failureOf(err);
      if (failure.log) app.log.error("request failed", { path: url.pathname, error: errorText(failure.log.cause) });
      return errorResponse(failure.body, failure.headers);
    }
  }
  return async (req) => {
    const started = performance.now();
    const url = new URL(req.url);
    const row = routes.get(url.pathname);
    const res = await serve(req, url, row);
    const ms = performance.now() - started;
    app.metrics?.request(req.method, row?.path ?? UNMATCHED, res.status, ms / 1000);
    app.log.info("request", { method: req.method, path: url.pathname, status: res.status, ms: Math.round(ms * 10) / 10 });
    return res;
  };
}
