import { writeOrRetry } from "../background";
import type { Config } from "../config";
import { AppError } from "../errors";
import type { Claim } from "../messages/idempotency";
import { chatMutedError, chatTarget, isChatMuted } from "../messages/chats";
import { refuseOptedOut, sendTo, type MessagingDeps } from "../messages/service";
import { messageTextProblem } from "../messages/text";
import { generatedAnswer } from "../messages/records";
import { isoTime } from "../messages/time";
import type { GenerateRequest, Generator } from "./generator";
import { withSpan } from "../observability/trace";

export interface GeneratorDeps extends MessagingDeps {
  generator: Generator | null;
  config: Pick<Config, "MAX_MESSAGE_LENGTH">;
}

export const NO_GENERATOR =
  "generator not configured: set OPENAI_API_KEY (and OPENAI_BASE_URL for a local OpenAI-compatible server)";

/**
 * Writes a reply with the generator and stores it; with `autoSend` it is sent exactly as
 * POST /api/send would send it. Unusable text is a BAD_GATEWAY and nothing is sent. With
 * `autoSend`, a contact that opted out is refused before anything is generated (FORBIDDEN).
 */
export async function generateReply(
  deps: GeneratorDeps,
  input: Omit<GenerateRequest, "phone"> & { phone?: string; chat_id?: string; autoSend?: boolean },
  opts: { signal?: AbortSignal; claim?: Claim } = {},
): Promise<ReturnType<typeof generatedAnswer>> {
  if (!deps.generator) throw new AppError("SERVICE_UNAVAILABLE", NO_GENERATOR);
  // The input schema lets exactly one of phone and chat_id through.
  const target = input.chat_id !== undefined ? await chatTarget(deps, input.chat_id) : { phone: input.phone! };
  const { chat_id: _, ...request } = { ...input, phone: target.phone };
  // The send would be refused: no generation is paid for (the send checks again). In a group, an opt-out mutes this automated send.
  if (request.autoSend && target.group && (await isChatMuted(deps.storage, target.group.id))) throw chatMutedError();
  if (request.autoSend && !target.group) await refuseOptedOut(deps.storage, request.phone);
  const generator = deps.generator;
  const text = await withSpan("generate", { "textwire.generator.model": generator.model }, () => generator.generate(request, opts.signal));
  const problem = messageTextProblem(text, deps.config.MAX_MESSAGE_LENGTH);
  if (problem) throw new AppError("BAD_GATEWAY", `generator: the reply is unusable: it ${problem}`);

  const id = Bun.randomUUIDv7();
  const createdAt = await deps.storage.generations.insert({ id, phone: request.phone, body: text, model: deps.generator.model, language: request.language ?? null });
  if (!request.autoSend) return generatedAnswer(text, id, false, isoTime(createdAt * 1000));

  // Stored with the message under the key, so a retry after a crash answers as this request would.
  const sent = await sendTo(deps, target, { message: text }, opts.claim && { claim: opts.claim, generated: text });
  // The network took it: a busy database must not fail the request (a retry would send again).
  await writeOrRetry("linking a generation to its message", () => deps.storage.generations.setMessage(id, sent.id), deps.log);
  return generatedAnswer(text, sent.id, true, sent.timestamp);
}
