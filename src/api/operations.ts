import type { App } from "../app";
import { throttledFailure } from "./auth";
import { noRoute } from "./errors";
import { checkHealth, checkReadiness } from "./health";
import { scrapeAllowed } from "./metrics";

/** One operations route: a path served to GET (and HEAD) without an API key. */
export interface OperationsRoute {
  path: string;
  /** `ip`: the client address, which a refused metrics token is counted against. */
  get(req: Request, url: URL, ctx: { ip: string }): Promise<Response>;
}

/**
 * Health, liveness, readiness and metrics (docs/operations.md): rows of the API's routing
 * table (src/api/http.ts), and the whole table of a worker's listener with WORKER_PORT
 * (createOperationsHandler there), with the same answers. `stopping` is true once a shutdown began.
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
          get: async (req: Request, url: URL, ctx: { ip: string }) => {
            if (!scrapeAllowed(req, app.config.METRICS_TOKEN)) {
              // A wrong token is a failed authentication like any other (counted, then 429).
              const throttled = throttledFailure(app, ctx.ip);
              if (throttled) throw throttled;
              return noRoute(req.method, url.pathname);
            }
            return new Response(await metrics.scrape(), { headers: { "Content-Type": metrics.contentType } });
          },
        }]
      : []),
  ];
}
