// Why src/api/http.ts serves REST through trpc-to-openapi's node handler, built once,
// behind a small adapter, rather than through the library's fetch handler: these pin the
// library's behaviour that the adapter exists for.
import { describe, expect, test } from "bun:test";
import { createOpenApiFetchHandler, createOpenApiNodeHttpHandler } from "trpc-to-openapi";
import { createAppRouter } from "../../src/api/router";

/** The app's router, counting how often the library walks its procedures (to route or to build a document). */
function countedRouter() {
  const router = createAppRouter(100);
  let walks = 0;
  const def = new Proxy(router._def, {
    get(target, prop, receiver) {
      if (prop === "procedures") walks++;
      return Reflect.get(target, prop, receiver);
    },
  });
  return { router: { ...router, _def: def } as typeof router, walks: () => walks };
}

/** One request through a node-style handler; resolves with the status it wrote. */
function nodeCall(handler: (req: Request, res: object) => Promise<void>, req: Request): Promise<number> {
  return new Promise((resolve, reject) => {
    const res = { statusCode: 200, setHeader() {}, end: () => resolve(res.statusCode) };
    handler(req, res).catch(reject);
  });
}

describe("trpc-to-openapi", () => {
  test("its fetch handler builds the route table again on every request (so we do not use it)", async () => {
    const { router, walks } = countedRouter();
    const request = () => createOpenApiFetchHandler({ router, endpoint: "/", req: new Request("http://127.0.0.1/nowhere"), createContext: () => ({}) } as never);
    expect((await request()).status).toBe(404);
    const afterOne = walks();
    await request();
    await request();
    expect(afterOne).toBeGreaterThan(0);
    expect(walks()).toBeGreaterThanOrEqual(3 * afterOne);
  });

  test("its node handler, built once, routes every request from the table it built then", async () => {
    const { router, walks } = countedRouter();
    const handler = createOpenApiNodeHttpHandler({ router, createContext: () => ({}) } as never) as unknown as (req: Request, res: object) => Promise<void>;
    const built = walks();
    for (let i = 0; i < 3; i++) expect(await nodeCall(handler, new Request("http://127.0.0.1/nowhere"))).toBe(404);
    expect(walks()).toBe(built);
  });

  test("its media type check is case-sensitive (the adapter hands it the checked type as application/json)", async () => {
    const { router } = countedRouter();
    const handler = createOpenApiNodeHttpHandler({ router, createContext: () => ({}) } as never) as unknown as (req: Request, res: object) => Promise<void>;
    const req = new Request("http://127.0.0.1/api/send", { method: "POST", headers: { "content-type": "Application/JSON" }, body: "{}" });
    expect(await nodeCall(handler, req)).toBe(415);
  });
});
