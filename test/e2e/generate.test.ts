// POST /api/generate with the real ChatOpenAI talking to a local OpenAI-compatible server.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createClient } from "../../src/client";
import { startFakeOpenAI } from "../support/fake-openai";
import { call, expectBadField, expectError, expectTimestamp, history, newPhone } from "./api";
import { lines, spawnServer, startServer, type Server } from "./harness";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

const model = startFakeOpenAI();
let server: Server;

beforeAll(async () => {
  server = await startServer({
    env: { OPENAI_API_KEY: "sk-local-test", OPENAI_BASE_URL: model.baseUrl, OPENAI_MODEL: "tiny-test-model", GENERATOR_TIMEOUT_MS: "1500", MAX_MESSAGE_LENGTH: "200" },
  });
}, 60_000);
afterAll(async () => {
  server?.kill();
  await model.stop();
}, 30_000);

interface Generated {
  success: boolean;
  generated_message: string;
  message_id: string;
  sent: boolean;
  timestamp: string;
}

const generate = (body: unknown, headers: Record<string, string> = {}) => call<Generated>(server, "POST", "/api/generate", { body, headers });

describe("what the model receives", () => {
  test("the system prompt carries instructions, language and country; then the turns in order", async () => {
    model.reply({ kind: "text", text: "¡Claro! Abrimos a las 9." });
    const before = model.requests.length;
    const context = [
      { role: "user", content: "Hola, ¿abren mañana?" },
      { role: "assistant", content: "Sí, abrimos mañana." },
      { role: "user", content: "¿A qué hora?" },
    ];
    const res = await generate({ phone: "+34612345678", context, instructions: "Mention we open at {9}.", language: "es" });
    expect(res.status).toBe(200);
    expect(res.body.generated_message).toBe("¡Claro! Abrimos a las 9.");
    const seen = model.requests[before]!;
    expect(seen.model).toBe("tiny-test-model");
    expect(seen.authorization).toBe("Bearer sk-local-test");
    const [system, ...turns] = seen.messages;
    expect(system?.role).toBe("system");
    expect(system?.content).toContain("Mention we open at {9}.");
    expect(system?.content).toContain("Spanish (es)");
    expect(system?.content).toContain("Spain (ES)");
    expect(turns).toEqual(context);
  });

  test("without a language the reply follows the last user turn", async () => {
    const before = model.requests.length;
    await generate({ phone: "+14155550123", context: [{ role: "user", content: "Bonjour !" }] });
    const system = model.requests[before]!.messages[0]!.content;
    expect(system).toContain("language of the contact's last message");
    expect(system).toContain("United States (US)");
  });
});

describe("auto_send", () => {
  test("absent: nothing is sent or added to history; message_id names the generation", async () => {
    model.reply({ kind: "text", text: "Thanks for writing!" });
    const phone = newPhone();
    const res = await generate({ phone, context: [{ role: "user", content: "Hi" }] });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, generated_message: "Thanks for writing!", sent: false });
    expectTimestamp(res.body.timestamp);
    expect((await history(server, phone)).total).toBe(0);
  });

  test("false: the same", async () => {
    const phone = newPhone();
    const res = await generate({ phone, context: [{ role: "user", content: "Hi" }], auto_send: false });
    expect(res.body.sent).toBe(false);
    expect((await history(server, phone)).total).toBe(0);
  });

  test("true: sent as by POST /api/send, and message_id is the sent message", async () => {
    model.reply({ kind: "text", text: "On its way!" });
    const phone = newPhone();
    const res = await generate({ phone, context: [{ role: "user", content: "Where is my order?" }], auto_send: true });
    expect(res.status).toBe(200);
    expect(res.body.sent).toBe(true);
    const page = await history(server, phone);
    expect(page.total).toBe(1);
    expect(page.messages[0]).toMatchObject({ id: res.body.message_id, message: "On its way!", direction: "outbound", status: "delivered", timestamp: res.body.timestamp });
  });

  test("the string \"false\" is not a boolean: 400, nothing sent", async () => {
    const phone = newPhone();
    expectBadField(await generate({ phone, context: [{ role: "user", content: "Hi" }], auto_send: "false" }), "auto_send");
    expect((await history(server, phone)).total).toBe(0);
  });
});

describe("validation", () => {
  const turn = { role: "user", content: "Hi" };
  test.each([
    ["phone", { phone: "555", context: [turn] }],
    ["context", { phone: "+14155550123" }],
    ["context", { phone: "+14155550123", context: [] }],
    ["context", { phone: "+14155550123", context: Array.from({ length: 101 }, () => turn) }],
    ["context.0.role", { phone: "+14155550123", context: [{ role: "system", content: "x" }] }],
    ["context.0.content", { phone: "+14155550123", context: [{ role: "user", content: "" }] }],
    ["instructions", { phone: "+14155550123", context: [turn], instructions: "x".repeat(4001) }],
    ["language", { phone: "+14155550123", context: [turn], language: "{{nope}}" }],
  ])("%s is checked", async (field, body) => {
    expectBadField(await generate(body), field);
  });

  test("100 turns and 4000 characters of instructions are accepted", async () => {
    const res = await generate({ phone: "+14155550123", context: Array.from({ length: 100 }, () => turn), instructions: "x".repeat(4000) });
    expect(res.status).toBe(200);
  });
});

describe("generator failures: 502, nothing sent", () => {
  const cases: [string, Parameters<typeof model.reply>[0]][] = [
    ["an upstream 500", { kind: "status", status: 500 }],
    ["an upstream that never answers", { kind: "hang" }],
    ["empty text", { kind: "text", text: "   " }],
    ["over-long text", { kind: "text", text: "x".repeat(201) }],
  ];
  for (const [name, reply] of cases) {
    test(name, async () => {
      model.reply(reply);
      const phone = newPhone();
      const res = await generate({ phone, context: [{ role: "user", content: "Hi" }], auto_send: true });
      const body = expectError(res, 502, "BAD_GATEWAY");
      expect(body.error.message).toContain("generator");
      expect((await history(server, phone)).total).toBe(0);
      model.reply({ kind: "text", text: "ok" });
    }, 15_000);
  }

  test("a retry with the same Idempotency-Key after a 502 really retries", async () => {
    const phone = newPhone();
    const body = { phone, context: [{ role: "user", content: "Hi" }], auto_send: true };
    model.reply({ kind: "status", status: 503 });
    expectError(await generate(body, { "Idempotency-Key": `gen-${phone}` }), 502, "BAD_GATEWAY");
    model.reply({ kind: "text", text: "Second time lucky" });
    const ok = await generate(body, { "Idempotency-Key": `gen-${phone}` });
    expect(ok.status).toBe(200);
    const again = await generate(body, { "Idempotency-Key": `gen-${phone}` });
    expect(again.body).toEqual(ok.body);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect((await history(server, phone)).messages.map((m) => m.message)).toEqual(["Second time lucky"]);
  }, 15_000);
});

describe("no generator configured", () => {
  test("503 naming OPENAI_API_KEY", async () => {
    const bare = await startServer();
    try {
      const res = await call(bare, "POST", "/api/generate", { body: { phone: "+14155550123", context: [{ role: "user", content: "Hi" }] } });
      const body = expectError(res, 503, "SERVICE_UNAVAILABLE");
      expect(body.error.message).toContain("OPENAI_API_KEY");
    } finally {
      bare.kill();
    }
  });
});

describe("the same procedure over tRPC and in the OpenAPI document", () => {
  test("messages.generate through the typed client", async () => {
    model.reply({ kind: "text", text: "Typed hello" });
    const client = createClient({ url: server.url, apiKey: server.apiKey });
    const res = await client.messages.generate.mutate({ phone: "+14155550123", context: [{ role: "user", content: "Hi" }] });
    expect(res).toMatchObject({ success: true, generated_message: "Typed hello", sent: false });
  });

  test("POST /api/generate is documented", async () => {
    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as { paths: Record<string, { post?: { requestBody?: unknown } }> };
    expect(doc.paths["/api/generate"]?.post?.requestBody).toBeDefined();
  });
});

describe("GENERATOR_MODEL (provider:model, through LangChain's initChatModel)", () => {
  test("openai:<model> picks the model name sent to the OpenAI-compatible server, over OPENAI_MODEL", async () => {
    const picked = await startServer({
      env: { OPENAI_API_KEY: "sk-local-test", OPENAI_BASE_URL: model.baseUrl, OPENAI_MODEL: "not-this-one", GENERATOR_MODEL: "openai:picked-model-1" },
    });
    try {
      model.reply({ kind: "text", text: "From the picked model" });
      const before = model.requests.length;
      const res = await call<Generated>(picked, "POST", "/api/generate", { body: { phone: "+14155550123", context: [{ role: "user", content: "Hi" }] } });
      expect(res.status).toBe(200);
      expect(res.body.generated_message).toBe("From the picked model");
      expect(model.requests.slice(before).map((r) => r.model)).toEqual(["picked-model-1"]);
    } finally {
      picked.kill();
    }
  });

  test("unset: openai:<OPENAI_MODEL>, as before", async () => {
    const before = model.requests.length;
    const res = await generate({ phone: "+14155550123", context: [{ role: "user", content: "Hi" }] });
    expect(res.status).toBe(200);
    expect(model.requests.slice(before).map((r) => r.model)).toEqual(["tiny-test-model"]);
  });

  test.each([["anthropic:claude-3-5-haiku"], ["gpt-4o-mini"]])("GENERATOR_MODEL=%s stops start-up with one line naming GENERATOR_MODEL", async (value) => {
    const child = await spawnServer({ env: { OPENAI_API_KEY: "sk-local-test", OPENAI_BASE_URL: model.baseUrl, GENERATOR_MODEL: value } });
    const code = await child.exited();
    expect(code).not.toBe(0);
    expect(child.stdout).not.toMatch(/listening on/);
    const errLines = lines(child.stderr);
    expect(errLines).toHaveLength(1);
    expect(errLines[0]!).toContain("GENERATOR_MODEL");
    expect(child.stderr).not.toContain("sk-local-test");
  });
});
