// Liveness, readiness and the drain on SIGTERM (docs/operations.md#readiness-and-liveness):
// ready turns 503 the moment a shutdown begins while the listener still serves for
// SHUTDOWN_DRAIN_MS, then the usual shutdown; SIGINT and SHUTDOWN_DRAIN_MS=0 skip the drain.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { history, newPhone, send } from "./api";
import { fileServers, lines, waitFor, type Server } from "./harness";

setDefaultTimeout(60_000);

const files = fileServers();
const boot = (env: Record<string, string> = {}): Promise<Server> => files.boot({ env });

const status = async (server: Server, path: string, key: string | null = null) => (await server.fetch(path, {}, key)).status;
/** The messages of the server's log lines, in order. */
const logged = (server: Server) => lines(server.stdout).flatMap((l) => (l.startsWith("{") ? [(JSON.parse(l) as { msg: string }).msg] : []));

describe("liveness and readiness", () => {
  test("both answer 200 without a key; /health is unchanged", async () => {
    const server = await boot();
    for (const path of ["/health/live", "/health/ready", "/health"]) {
      const res = await server.fetch(path, {}, null);
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
      expect(await res.json()).toEqual({ status: "ok" });
    }
    expect(await status(server, "/health/nothing")).toBe(404);
  });

  test("ready is 503 while the database takes no write; live stays 200", async () => {
    const server = await boot();
    const block = await server.db.blockWrites();
    try {
      const res = await server.fetch("/health/ready", {}, null);
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ status: "unavailable", reason: "database" });
      expect(await status(server, "/health/live")).toBe(200);
    } finally {
      await block.release();
    }
    expect(await status(server, "/health/ready")).toBe(200);
  });
});

describe("SIGTERM drains first", () => {
  test("ready answers 503 at once while live and the API still answer, then the process stops and exits 0", async () => {
    const server = await boot({ SHUTDOWN_DRAIN_MS: "2000" });
    const phone = newPhone();
    await send(server, phone, "before the stop");
    server.proc.kill("SIGTERM");
    const ready = await waitFor("ready to answer 503", 5000, async () => {
      const res = await server.fetch("/health/ready", {}, null);
      return res.status === 503 ? res : undefined;
    });
    expect(await ready.json()).toEqual({ status: "unavailable", reason: "shutting down" });
    // Still within the drain: the listener serves.
    expect(await status(server, "/health/live")).toBe(200);
    expect((await history(server, phone)).total).toBe(1);
    expect(await server.stop()).toBe(0);
    const msgs = logged(server);
    const draining = msgs.findIndex((m) => m.startsWith("draining"));
    expect(draining).toBeGreaterThanOrEqual(0);
    expect(msgs.indexOf("shutting down")).toBeGreaterThan(draining);
    expect(msgs.at(-1)).toBe("stopped");
  });

  test("with SHUTDOWN_DRAIN_MS=0 it stops without a drain", async () => {
    const server = await boot({ SHUTDOWN_DRAIN_MS: "0" });
    expect(await server.stop("SIGTERM")).toBe(0);
    expect(logged(server).some((m) => m.startsWith("draining"))).toBe(false);
    expect(logged(server)).toContain("shutting down");
  });

  test("SIGINT (Ctrl-C) stops without a drain", async () => {
    const server = await boot({ SHUTDOWN_DRAIN_MS: "600000" });
    expect(await server.stop("SIGINT")).toBe(0);
    expect(logged(server).some((m) => m.startsWith("draining"))).toBe(false);
  });

  test("SIGINT during a drain ends it", async () => {
    const server = await boot({ SHUTDOWN_DRAIN_MS: "600000" });
    server.proc.kill("SIGTERM");
    await waitFor("the drain to begin", 5000, () => logged(server).some((m) => m.startsWith("draining")));
    expect(await status(server, "/health/ready")).toBe(503);
    // Ten minutes of drain are cut short: the harness's wait for the exit is 15 s.
    expect(await server.stop("SIGINT")).toBe(0);
    expect(logged(server).at(-1)).toBe("stopped");
  });
});
