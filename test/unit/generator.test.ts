import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { FakeChatModel, FakeListChatModel } from "@langchain/core/utils/testing";
import { AppError } from "../../src/errors";
import { ChatOpenAI } from "@langchain/openai";
import { loadConfig } from "../../src/config";
import { createConfiguredGenerator, generatorModel, loadChatModel } from "../../src/generator/configured";
import { createGenerator, type Generator } from "../../src/generator/generator";
import { countryLabel, isLanguage, languageLabel } from "../../src/generator/language";
import { promptValues } from "../../src/generator/prompt";
import { generateReply } from "../../src/generator/service";
import { createLoopbackNetwork } from "../../src/network/loopback";
import { dialects, quietLog, storages, oneLine } from "./helpers";

// A real database, PostgreSQL too: slower than bun's 5 s default allows on a loaded machine.
setDefaultTimeout(30_000);

const turns = [
  { role: "user" as const, content: "Hola, ¿abren mañana?" },
  { role: "assistant" as const, content: "Sí, de 9 a 18." },
  { role: "user" as const, content: "¿Y el domingo?" },
];

const listModel = (text: string, sleep?: number) =>
  createGenerator({ chatModel: new FakeListChatModel({ responses: [text], sleep }), model: "fake", timeoutMs: 1000 });

describe("prompt", () => {
  test("a BCP 47 tag is named, a language name is kept", () => {
    expect(languageLabel("es")).toBe("Spanish (es)");
    expect(languageLabel("pt-BR")).toBe("Brazilian Portuguese (pt-BR)");
    expect(languageLabel("Spanish")).toBe("Spanish");
  });

  test("languages are checked", () => {
    expect(isLanguage("es")).toBe(true);
    expect(isLanguage("zh-Hant-TW")).toBe(true);
    expect(isLanguage("Klingon")).toBe(true);
    expect(isLanguage("12")).toBe(false);
    expect(isLanguage("{system}")).toBe(false);
  });

  test("the country is named from its code", () => {
    expect(countryLabel("ES")).toBe("Spain (ES)");
    expect(countryLabel(undefined)).toBe("an unknown country");
  });

  test("without a language the reply follows the last user turn; instructions default", () => {
    const v = promptValues({ context: turns });
    expect(v.language).toContain("language of the contact's last message");
    expect(v.instructions).toContain("none");
    expect(v.conversation.map((m) => m.getType())).toEqual(["human", "ai", "human"]);
  });
});

describe("createGenerator", () => {
  test("the model receives the system prompt, then the turns in order", async () => {
    // FakeChatModel answers with the text of every message it received.
    const generator = createGenerator({ chatModel: new FakeChatModel({}), model: "fake", timeoutMs: 1000 });
    const text = await generator.generate({ phone: "+34612345678", context: turns, instructions: "Use {braces} literally", language: "fr" });
    expect(text).toContain("Instructions from the sender: Use {braces} literally");
    expect(text).toContain("French (fr)");
    expect(text).toContain("Spain (ES)");
    const order = turns.map((t) => text.indexOf(t.content));
    expect(order.every((i) => i > 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
  });

  test("a model slower than the limit is a BAD_GATEWAY naming the limit", async () => {
    const generator = createGenerator({ chatModel: new FakeListChatModel({ responses: ["late"], sleep: 500 }), model: "fake", timeoutMs: 50 });
    const err = await generator.generate({ phone: "+14155550123", context: turns }).catch((e) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err.code).toBe("BAD_GATEWAY");
    expect(err.message).toContain("GENERATOR_TIMEOUT_MS");
  });
});

describe.each(dialects)("generateReply on $name", (dialect) => {
  const fresh = storages(dialect);
  async function deps(generator: Generator | null, maxLength = 10000) {
    const storage = await fresh();
    const generations = () => dialect.rows(storage, "SELECT id, body, model, message_id AS \"messageId\" FROM generations");
    return { storage, log: quietLog, lines: oneLine(createLoopbackNetwork()), generator, config: { MAX_MESSAGE_LENGTH: maxLength }, generations };
  }

  test("without auto_send the generation is stored and nothing is sent", async () => {
    const d = await deps(listModel("  Hello there!  "));
    const reply = await generateReply(d, { phone: "+14155550123", context: turns });
    expect(reply).toMatchObject({ generated_message: "Hello there!", sent: false });
    expect((await d.storage.messages.history("+14155550123", 10, 0)).total).toBe(0);
    expect(await d.generations()).toEqual([{ id: reply.message_id, body: "Hello there!", model: "fake", messageId: null }]);
  });

  test("with auto_send the reply is sent and message_id is the sent message", async () => {
    const d = await deps(listModel("On its way."));
    const reply = await generateReply(d, { phone: "+14155550123", context: turns, autoSend: true });
    expect(reply.sent).toBe(true);
    const sent = await d.storage.messages.get(reply.message_id);
    expect(sent).toMatchObject({ body: "On its way.", direction: "outbound", status: "delivered" });
    expect((await d.generations())[0]?.messageId).toBe(reply.message_id);
  });

  test("with auto_send a link that cannot be written now still answers the send, and lands later", async () => {
    const d = await deps(listModel("On its way."));
    const { generations } = d.storage;
    let failures = 0;
    const failingOnce = { ...generations, setMessage: (id: string, messageId: string) => (failures++ === 0 ? Promise.reject(new Error("database is locked")) : generations.setMessage(id, messageId)) };
    const storage = Object.create(d.storage, { generations: { value: failingOnce } });
    const reply = await generateReply({ ...d, storage }, { phone: "+14155550123", context: turns, autoSend: true });
    expect(reply).toMatchObject({ sent: true, generated_message: "On its way." });
    for (let i = 0; i < 100 && (await d.generations())[0]?.messageId == null; i++) await Bun.sleep(50);
    expect((await d.generations())[0]?.messageId).toBe(reply.message_id);
    expect(failures).toBe(2);
  });

  test("no generator: SERVICE_UNAVAILABLE naming OPENAI_API_KEY", async () => {
    const err = await generateReply(await deps(null), { phone: "+14155550123", context: turns }).catch((e) => e);
    expect(err.code).toBe("SERVICE_UNAVAILABLE");
    expect(err.message).toContain("OPENAI_API_KEY");
  });

  test.each([
    ["empty", "   ", 100],
    ["over-long", "x".repeat(11), 10],
  ])("%s text is a BAD_GATEWAY and nothing is sent", async (_name, text, max) => {
    const d = await deps(listModel(text), max);
    const err = await generateReply(d, { phone: "+14155550123", context: turns, autoSend: true }).catch((e) => e);
    expect(err.code).toBe("BAD_GATEWAY");
    expect((await d.storage.messages.history("+14155550123", 10, 0)).total).toBe(0);
    expect(await d.generations()).toHaveLength(0);
  });
});

describe("the configured chat model (initChatModel)", () => {
  const env = { OPENAI_API_KEY: "sk-unit", OPENAI_BASE_URL: "http://127.0.0.1:9/v1", OPENAI_MODEL: "from-openai-model" };

  test("GENERATOR_MODEL=openai:<model> gives @langchain/openai's ChatOpenAI with that model", async () => {
    const config = loadConfig({ ...env, GENERATOR_MODEL: "openai:gpt-4o-mini" });
    expect(generatorModel(config)).toEqual({ provider: "openai", model: "gpt-4o-mini" });
    const chat = await loadChatModel(config);
    expect(chat).toBeInstanceOf(ChatOpenAI);
    expect((chat as ChatOpenAI).model).toBe("gpt-4o-mini");
    expect(createConfiguredGenerator(config)?.model).toBe("gpt-4o-mini");
  });

  test("unset: openai with OPENAI_MODEL, OPENAI_BASE_URL and OPENAI_API_KEY", async () => {
    const config = loadConfig(env);
    expect(generatorModel(config)).toEqual({ provider: "openai", model: "from-openai-model" });
    const chat = (await loadChatModel(config)) as ChatOpenAI;
    expect(chat).toBeInstanceOf(ChatOpenAI);
    expect(chat.model).toBe("from-openai-model");
    expect(chat.clientConfig.baseURL).toBe("http://127.0.0.1:9/v1");
  });

  test("a model name may itself hold colons (fine-tuned ids)", () => {
    const config = loadConfig({ ...env, GENERATOR_MODEL: "openai:ft:gpt-4o-mini:acme::abc123" });
    expect(generatorModel(config)).toEqual({ provider: "openai", model: "ft:gpt-4o-mini:acme::abc123" });
  });

  test.each([
    ["anthropic:claude-3-5-haiku", 'provider "anthropic" is not installed'],
    ["gpt-4o-mini", "must be provider:model"],
    ["openai:", "must be provider:model"],
  ])("GENERATOR_MODEL=%s is a config error naming GENERATOR_MODEL", (value, reason) => {
    expect(() => loadConfig({ ...env, GENERATOR_MODEL: value })).toThrow(`invalid environment variable GENERATOR_MODEL: ${reason}`);
  });
});
