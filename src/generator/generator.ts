import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { StringOutputParser } from "@langchain/core/output_parsers";
import { AppError } from "../errors";
import { countryOf } from "../messages/phone";
import { promptValues, replyPrompt, type ContextTurn } from "./prompt";

export interface GenerateRequest {
  phone: string;
  context: ContextTurn[];
  instructions?: string;
  language?: string;
}

export interface Generator {
  /** The model name, recorded with every generation. */
  readonly model: string;
  /** The reply text, trimmed. Throws BAD_GATEWAY on failure or timeout. */
  generate(request: GenerateRequest, signal?: AbortSignal): Promise<string>;
}

/** A generator over any LangChain chat model: the reply prompt, the model, the text out. */
export function createGenerator(opts: { chatModel: BaseChatModel; model: string; timeoutMs: number }): Generator {
  const chain = replyPrompt.pipe(opts.chatModel).pipe(new StringOutputParser());
  return {
    model: opts.model,
    async generate(request, signal) {
      const timeout = AbortSignal.timeout(opts.timeoutMs);
      const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
      const values = promptValues({ ...request, country: countryOf(request.phone) });
      let timer: ReturnType<typeof setTimeout> | undefined;
      // The race makes the limit hold even if a model ignores the signal.
      const expired = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error("timeout")), opts.timeoutMs);
      });
      try {
        const text = await Promise.race([chain.invoke(values, { signal: combined }), expired]);
        return text.trim();
      } catch (err) {
        if (timeout.aborted || (err as Error)?.message === "timeout") {
          throw new AppError("BAD_GATEWAY", `generator: no reply within ${opts.timeoutMs} ms (GENERATOR_TIMEOUT_MS)`);
        }
        if (signal?.aborted) throw new AppError("SERVICE_UNAVAILABLE", "generator: cancelled");
        const status = (err as { status?: unknown })?.status;
        throw new AppError("BAD_GATEWAY", `generator: the model server failed${typeof status === "number" ? ` (status ${status})` : ""}`);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
