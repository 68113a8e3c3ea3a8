// A database that fails while a /trpc request is authenticated is answered in tRPC's error
// shape (src/api/http.ts keeps the failure for the procedures to throw), 503 as on REST.
import { expect, test } from "bun:test";
import { createHttpHandler } from "../../src/api/http";
import { createApp } from "../../src/app";
import { loadConfig } from "../../src/config";
import { createLogger } from "../../src/log";
import { dialects, storages } from "./helpers";

const KEY = "tw_unit_aaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const fresh = storages(dialects[0]!);

test("a database outage during authentication: /trpc answers tRPC's 503, /api the REST envelope's", async () => {
  const app = await createApp(loadConfig({ DATABASE_URL: ":memory:", API_KEYS: KEY }), await fresh(), createLogger("error"));
  const down = () => Promise.reject(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" }));
  app.verifyKey = Object.assign(down, { byHash: down });
  const http = createHttpHandler(app);
  const get = (path: string) => http.fetch(new Request(`http://127.0.0.1${path}`, { headers: { authorization: `Bearer ${KEY}` } }), "127.0.0.1");

  const trpc = await get("/trpc/messages.poll");
  expect(trpc.status).toBe(503);
  expect(trpc.headers.get("retry-after")).toBe("1");
  expect(await trpc.json()).toMatchObject({ error: { data: { code: "SERVICE_UNAVAILABLE", httpStatus: 503 } } });

  const rest = await get("/api/messages/poll");
  expect(rest.status).toBe(503);
  expect(await rest.json()).toMatchObject({ success: false, error: { code: "SERVICE_UNAVAILABLE" } });
});
