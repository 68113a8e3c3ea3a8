import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { Config } from "../config";
import type { Recorder } from "../observability/recorder";
import type { Generator } from "./generator";
import { tracedFetch } from "../observability/trace";

type GeneratorConfig = Pick<Config, "OPENAI_API_KEY" | "OPENAI_BASE_URL" | "OPENAI_MODEL" | "GENERATOR_MODEL" | "GENERATOR_TIMEOUT_MS">;

/** GENERATOR_MODEL split into provider and model; unset, the OpenAI variables decide (openai:OPENAI_MODEL). */
export function generatorModel(config: Pick<Config, "OPENAI_MODEL" | "GENERATOR_MODEL">): { provider: string; model: string } {
  const spec = config.GENERATOR_MODEL ?? `openai:${config.OPENAI_MODEL}`;
  const colon = spec.indexOf(":");
  return { provider: spec.slice(0, colon), model: spec.slice(colon + 1) };
}

/**
 * The chat model of the configuration, through LangChain's initChatModel: the provider
 * picks the package and class (`openai`: @langchain/openai's ChatOpenAI, on OpenAI or any
 * compatible server at OPENAI_BASE_URL). Loaded on first use only.
 */
export async function loadChatModel(config: GeneratorConfig): Promise<BaseChatModel> {
  const { provider, model } = generatorModel(config);
  const { initChatModel } = await import("langchain/chat_models/universal");
  const configurable = await initChatModel(model, {
    modelProvider: provider,
    apiKey: config.OPENAI_API_KEY,
    // tracedFetch: the model server's calls carry traceparent when tracing is on.
    configuration: { fetch: tracedFetch, ...(config.OPENAI_BASE_URL ? { baseURL: config.OPENAI_BASE_URL } : {}) },
    maxRetries: 1,
    timeout: config.GENERATOR_TIMEOUT_MS,
  });
  // The provider's own model (built once by initChatModel), without the configurable wrapper.
  return configurable._getModelInstance();
}

/**
 * The generator of the configuration; null without OPENAI_API_KEY (openai is the one
 * installed provider). LangChain is loaded on the first generation, so a service
 * without a generator, or one that never generates, does not carry it in memory.
 */
export function createConfiguredGenerator(config: GeneratorConfig, metrics?: Pick<Recorder, "generation">): Generator | null {
  if (!config.OPENAI_API_KEY) return null;
  const { model } = generatorModel(config);
  let loading: Promise<Generator> | undefined;
  const load = async () => {
    const [chatModel, { createGenerator }] = await Promise.all([loadChatModel(config), import("./generator")]);
    return createGenerator({ chatModel, model, timeoutMs: config.GENERATOR_TIMEOUT_MS });
  };
  return {
    model,
    async generate(request, signal) {
      // A failed load (say, the model package missing) is tried again on the next generation.
      loading ??= load().catch((err: unknown) => {
        loading = undefined;
        throw err;
      });
      const started = performance.now();
      const took = () => (performance.now() - started) / 1000;
      try {
        const text = await (await loading).generate(request, signal);
        metrics?.generation("ok", took());
        return text;
      } catch (err) {
        metrics?.generation("error", took());
        throw err;
      }
    },
  };
}
