// The REST face of the router (src/api/rest.ts): resolved once, and assembling a
// procedure's input as trpc-to-openapi does. End to end over HTTP: test/e2e/*.
import { unlimited } from "../../src/auth/policy";
import { afterAll, describe, expect, test } from "bun:test";
import { TRPCError } from "@trpc/server";
import { createApp } from "../../src/app";
import { failureOf } from "../../src/api/errors";
import { restOperations, type RestOperation } from "../../src/api/rest";
import { createAppRouter } from "../../src/api/router";
import type { Context } from "../../src/api/trpc";
import { loadConfig } from "../../src/config";
import { dialects, quietLog, rejectionOf } from "./helpers";

const storage = await dialects[0]!.open();
const app = await createApp(loadConfig({ NETWORK: "loopback" }), storage, quietLog);
afterAll(() => storage.close());

/** The router, counting how often its procedures are walked. */
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

const operations = restOperations(createAppRouter(100));
function op(method: string, path: string): RestOperation {
  const found = operations.find((o) => o.method === method && o.pattern.test(path));
  if (!found) throw new Error(`no operation ${method} ${path}`);
  return found;
}

/** The path's parameters, as the HTTP edge's one match gives them. */
const params = (o: RestOperation, path: string) => o.pattern.exec(path)?.groups ?? {};
const context = (): Context => ({ app, req: new Request("http://127.0.0.1/"), ip: "127.0.0.1", peer: "127.0.0.1", requestId: "r", responseHeaders: {}, keyId: "env:0", key: unlimited("env:0") });
const get = (path: string, query = "") =>
  op("GET", path).call({ ctx: context(), params: params(op("GET", path), path), body: undefined, query: new URLSearchParams(query), signal: new AbortController().signal });
const post = (path: string, body: unknown) =>
  op("POST", path).call({ ctx: context(), params: params(op("POST", path), path), body, query: new URLSearchParams(), signal: new AbortController().signal });

describe("REST operations", () => {
  test("are the document's routes, in the router's order (poll and scheduled before history)", () => {
    expect(operations.map((o) => `${o.method} ${o.pattern.source}`)).toEqual([
      "POST ^\\/api\\/send$",
      "GET ^\\/api\\/drafts$",
      "POST ^\\/api\\/messages\\/(?<id>[^/]+)\\/approve$",
      "POST ^\\/api\\/messages\\/(?<id>[^/]+)\\/reject$",
      "GET ^\\/api\\/messages\\/poll$",
      "GET ^\\/api\\/messages\\/scheduled$",
      "POST ^\\/api\\/messages\\/(?<id>[^/]+)\\/cancel$",
      "POST ^\\/api\\/messages\\/(?<id>[^/]+)\\/reactions$",
      "DELETE ^\\/api\\/messages\\/(?<id>[^/]+)\\/reactions$",
      "POST ^\\/api\\/messages\\/(?<id>[^/]+)\\/edit$",
      "POST ^\\/api\\/messages\\/(?<id>[^/]+)\\/unsend$",
      "GET ^\\/api\\/messages\\/(?<phone>[^/]+)$",
      "POST ^\\/api\\/generate$",
      "POST ^\\/api\\/chats$",
      "GET ^\\/api\\/chats$",
      "GET ^\\/api\\/chats\\/(?<id>[^/]+)\\/messages$",
      "PATCH ^\\/api\\/chats\\/(?<id>[^/]+)$",
      "POST ^\\/api\\/chats\\/(?<id>[^/]+)\\/participants$",
      "DELETE ^\\/api\\/chats\\/(?<id>[^/]+)\\/participants\\/(?<phone>[^/]+)$",
      "POST ^\\/api\\/chats\\/(?<id>[^/]+)\\/typing$",
      "DELETE ^\\/api\\/chats\\/(?<id>[^/]+)\\/typing$",
      "POST ^\\/api\\/chats\\/(?<id>[^/]+)\\/read$",
      "GET ^\\/api\\/chats\\/(?<id>[^/]+)$",
      "GET ^\\/api\\/contacts\\/(?<phone>[^/]+)$",
      "POST ^\\/api\\/contacts\\/(?<phone>[^/]+)\\/typing$",
      "DELETE ^\\/api\\/contacts\\/(?<phone>[^/]+)\\/typing$",
      "POST ^\\/api\\/contacts\\/(?<phone>[^/]+)\\/read$",
      "GET ^\\/api\\/network$",
      "GET ^\\/api\\/lines$",
      "POST ^\\/api\\/lines$",
      "GET ^\\/api\\/lines\\/(?<id>[^/]+)$",
      "PATCH ^\\/api\\/lines\\/(?<id>[^/]+)$",
      "DELETE ^\\/api\\/lines\\/(?<id>[^/]+)$",
      "POST ^\\/api\\/lines\\/(?<id>[^/]+)\\/test$",
      "POST ^\\/webhooks\\/loopback$",
      "POST ^\\/api\\/webhook-endpoints$",
      "GET ^\\/api\\/webhook-endpoints$",
      "GET ^\\/api\\/webhook-endpoints\\/(?<id>[^/]+)$",
      "PATCH ^\\/api\\/webhook-endpoints\\/(?<id>[^/]+)$",
      "DELETE ^\\/api\\/webhook-endpoints\\/(?<id>[^/]+)$",
      "POST ^\\/api\\/webhook-endpoints\\/(?<id>[^/]+)\\/rotate-secret$",
      "GET ^\\/api\\/webhook-endpoints\\/(?<id>[^/]+)\\/deliveries$",
      "POST ^\\/api\\/webhook-endpoints\\/(?<id>[^/]+)\\/replay$",
      "POST ^\\/api\\/webhook-endpoints\\/(?<id>[^/]+)\\/deliveries\\/(?<delivery_id>[^/]+)\\/retry$",
      "GET ^\\/api\\/events$",
      "GET ^\\/api\\/keys$",
      "POST ^\\/api\\/keys$",
      "DELETE ^\\/api\\/keys\\/(?<id>[^/]+)$",
    ]);
  });

  test("read a JSON body only when the input has fields besides the path's; a creation answers 201", () => {
    const withBody = operations.filter((o) => o.takesBody).map((o) => `${o.method} ${o.pattern.source}`);
    expect(withBody).toEqual([
      "POST ^\\/api\\/send$",
      "POST ^\\/api\\/messages\\/(?<id>[^/]+)\\/approve$",
      "POST ^\\/api\\/messages\\/(?<id>[^/]+)\\/reactions$",
      "POST ^\\/api\\/messages\\/(?<id>[^/]+)\\/edit$",
      "POST ^\\/api\\/generate$",
      "POST ^\\/api\\/chats$",
      "PATCH ^\\/api\\/chats\\/(?<id>[^/]+)$",
      "POST ^\\/api\\/chats\\/(?<id>[^/]+)\\/participants$",
      "POST ^\\/api\\/lines$",
      "PATCH ^\\/api\\/lines\\/(?<id>[^/]+)$",
      "POST ^\\/webhooks\\/loopback$",
      "POST ^\\/api\\/webhook-endpoints$",
      "PATCH ^\\/api\\/webhook-endpoints\\/(?<id>[^/]+)$",
      "POST ^\\/api\\/webhook-endpoints\\/(?<id>[^/]+)\\/replay$",
      "POST ^\\/api\\/keys$",
    ]);
    expect(operations.filter((o) => o.status !== 200).map((o) => `${o.status} ${o.method} ${o.pattern.source}`)).toEqual([
      "201 POST ^\\/api\\/chats$",
      "201 POST ^\\/api\\/lines$",
      "201 POST ^\\/api\\/webhook-endpoints$",
      "201 POST ^\\/api\\/keys$",
    ]);
  });

  test("are resolved once: a request does not walk the router", async () => {
    const { router, walks } = countedRouter();
    const built = restOperations(router);
    const before = walks();
    const poll = built.find((o) => o.pattern.test("/api/messages/poll"))!;
    for (let i = 0; i < 3; i++) {
      await poll.call({ ctx: context(), params: {}, body: undefined, query: new URLSearchParams(), signal: new AbortController().signal });
    }
    expect(walks()).toBe(before);
  });

  test("run the procedure: a send is stored and answered", async () => {
    const answer = (await post("/api/send", { phone: "+14155550123", message: "hi" })) as { success: boolean; message_id: string; status: string };
    expect(answer.success).toBe(true);
    expect(answer.status).toBe("delivered");
    expect((await storage.messages.get(answer.message_id))?.body).toBe("hi");
  });

  test("coerce query strings by the schema and take the path's parameter as it came (percent-encoded)", async () => {
    await post("/webhooks/loopback", { phone: "+14155550124", message: "one" });
    await post("/webhooks/loopback", { phone: "+14155550124", message: "two" });
    const page = (await get("/api/messages/%2B14155550124", "limit=1&offset=1")) as { messages: { message: string }[]; total: number; limit: number };
    expect(page.total).toBe(2);
    expect(page.limit).toBe(1);
    expect(page.messages.map((m) => m.message)).toEqual(["one"]);
  });

  test("a name given twice is an array, refused by a scalar field with the field named", async () => {
    const err = await rejectionOf(get("/api/messages/poll", "limit=1&limit=2"));
    expect(err).toBeInstanceOf(TRPCError);
    expect((err as TRPCError).code).toBe("BAD_REQUEST");
    expect(JSON.stringify((err as TRPCError).cause)).toContain("limit");
  });

  test("a path parameter wins over a query field of the same name", async () => {
    const err = await rejectionOf(get("/api/messages/not-a-phone", "phone=%2B14155550123"));
    expect((err as TRPCError).code).toBe("BAD_REQUEST");
    expect(JSON.stringify((err as TRPCError).cause)).toContain("phone");
  });

  test("answer the middleware's errors as TRPCErrors, mapped by the one map (no key: UNAUTHORIZED)", async () => {
    const ctx = { ...context(), keyId: undefined, key: undefined };
    const err = await rejectionOf(op("GET", "/api/messages/poll").call({ ctx, params: {}, body: undefined, query: new URLSearchParams(), signal: new AbortController().signal }));
    expect(err).toBeInstanceOf(TRPCError);
    expect(failureOf(err).body.code).toBe("UNAUTHORIZED");
  });
});
