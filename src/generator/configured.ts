import type { Config } from "../config";
import type { Generator } from "./generator";

/**
 * The generator of the configuration: ChatOpenAI on OpenAI or any compatible server; null
 * without OPENAI_API_KEY. LangChain is loaded on the first generation, so a service
 * without a generator does not carry it in memory.
 */
export function createConfiguredGenerator(config: Config): Generator | null {
  if (!config.OPENAI_API_KEY) return null;
  let loading: Promise<Generator> | undefined;
  const load = async () => {
    const [{ ChatOpenAI }, { createGenerator }] = await Promise.all([import("@langchain/openai"), import("./generator")]);
    const chatModel = new ChatOpenAI({
      model: config.OPENAI_MODEL,
      apiKey: config.OPENAI_API_KEY,
      configuration: config.OPENAI_BASE_URL ? { baseURL: config.OPENAI_BASE_URL } : {},
      maxRetries: 1,
      timeout: config.GENERATOR_TIMEOUT_MS,
    });
    return createGenerator({ chatModel, model: config.OPENAI_MODEL, timeoutMs: config.GENERATOR_TIMEOUT_MS });
  };
  return {
    model: config.OPENAI_MODEL,
    async generate(request, signal) {
      loading ??= load();
      return (await loading).generate(request, signal);
    },
  };
}
