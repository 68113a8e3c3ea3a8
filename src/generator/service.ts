import { writeOrRetry } from "../background";
import type { Config } from "../config";
import { AppError } from "../errors";
import type { Claim } from "../messages/idempotency";
import { chatTarget } from "../messages/chats";
import { sendVerdict } from "../messages/send-policy";
import { sendTo, type MessagingDeps } from "../messages/service";
import { messageTextProblem } from "../messages/text";
import { generatedAnswer } from "../messages/records";
import { isoTime } from "../messages/time";
import type { GenerateRequest, Generator } from "./generator";
import { withSpan } from "../observability/trace";

export interface GeneratorDeps extends MessagingDeps {
  generator: Generator | null;
  config: Pick<Config, "MAX_MESSAGE_LENGTH"> & Partial<Pick<Config, "HANDOFF_MINUTES" | "HANDOFF_KEYWORDS">>;
}

export const NO_GENERATOR =
  "generator not configured: set OPENAI_API_KEY (and OPENAI_BASE_URL for a local OpenAI-compatible server)";

/**
 * Writes a reply with the generator and stores it; with `autoSend` it is sent as an automated
 * send (src/messages/send-policy.ts): as POST /api/send would send it, or held as a draft in a
 * supervised chat (or for a drafting key), answered `sent: false` with the draft's id. Unusable
 * text is a BAD_GATEWAY and nothing is sent. With `autoSend`, a send the policy refuses (an
 * opted-out contact, a muted group, a human chat) is refused before anything is generated.
 */
export async function generateReply(
  deps: GeneratorDeps,
  input: Omit<GenerateRequest, "phone"> & { phone?: string; chat_id?: string; autoSend?: boolean },
  opts: { signal?: AbortSignal; claim?: Claim } = {},
): Promise<ReturnType<typeof generatedAnswer>> {
  // The input schema lets exactly one of phone and chat_id through.
  const target = input.chat_id !== undefined ? await chatTarget(deps, input.chat_id) : { phone: input.phone! };
  const { chat_id: _, ...request } = { ...input, phone: target.phone };
  // The send would be refused: no generation is paid for (the send asks again).
  if (request.autoSend) {
    const verdict = await sendVerdict(deps.storage, target.group ? { phone: "", groupId: target.group.id } : { phone: target.phone }, { automated: true, key: deps.key });
    if (verdict.action === "skip" || verdict.action === "refuse") throw verdict.error;
  }
  if (!deps.generator) throw new AppError("SERVICE_UNAVAILABLE", NO_GENERATOR);
  const generator = deps.generator;
  const text = await withSpan("generate", { "textwire.generator.model": generator.model }, () => generator.generate(request, opts.signal));
  const problem = messageTextProblem(text, deps.config.MAX_MESSAGE_LENGTH);
  if (problem) throw new AppError("BAD_GATEWAY", `generator: the reply is unusable: it ${problem}`);

  const id = Bun.randomUUIDv7();
  const createdAt = await deps.storage.generations.insert({ id, phone: request.phone, body: text, model: deps.generator.model, language: request.language ?? null });
  if (!request.autoSend) return generatedAnswer(text, id, false, isoTime(createdAt * 1000));

  // Stored with the message under the key, so a retry after a crash answers as this request would.
  const sent = await sendTo(deps, target, { message: text, automated: true }, opts.claim && { claim: opts.claim, generated: text });
  // The network took it: a busy database must not fail the request (a retry would send again).
  await writeOrRetry("linking a generation to its message", () => deps.storage.generations.setMessage(id, sent.id), deps.log);
  return generatedAnswer(text, sent.id, sent.status !== "draft", sent.timestamp);
}
