import { defineWorkflow, isOptedOut, optOutAction, type ContextTurn, type MessageRecord } from "../src/workflow";

/** Wait until a contact has been quiet this long, so a burst of texts gets one reply. */
const QUIET_MS = 5_000;
/** At most this many replies to one contact an hour, so two bots cannot loop. */
const MAX_REPLIES_PER_HOUR = 3;
/** How much of the conversation the generator sees. */
const CONTEXT_MESSAGES = 20;
const INSTRUCTIONS =
  "You are the automatic assistant of this number. Answer briefly and kindly; if you cannot help, say a person will reply soon.";

interface Waiting {
  /** The latest inbound message of the burst: the one the reply answers. */
  id: string;
  at: number;
}

export default defineWorkflow({
  name: "autoresponder",
  schedule: "*/5 * * * * *",
  timezone: "UTC",
  timeoutMs: 60_000,
  requires: ["generator"],
  async run(ctx) {
    const waiting = (await ctx.state.get<Record<string, Waiting>>("waiting")) ?? {};
    const replies = (await ctx.state.get<Record<string, number[]>>("replies")) ?? {};

    for (const msg of await ctx.poll()) {
      // STOP, START and the other keywords are Textwire's to act on, not a conversation to answer.
      if (optOutAction(msg.message)) delete waiting[msg.phone];
      else waiting[msg.phone] = { id: msg.id, at: Date.parse(msg.timestamp) };
    }

    const now = Date.now();
    for (const [phone, last] of Object.entries(waiting)) {
      if (now - last.at < QUIET_MS) continue; // still typing: answer the whole burst later
      const recent = (replies[phone] ?? []).filter((t) => now - t < 3_600_000);
      // A contact that opted out (Textwire keeps the state) gets no reply, and nothing is
      // generated for it. A STOP arriving meanwhile makes the reply FORBIDDEN: skipped too.
      if (await ctx.optedOut(phone)) {
        ctx.log.info("contact opted out; not replying", { phone });
      } else if (recent.length >= MAX_REPLIES_PER_HOUR) {
        ctx.log.warn("reply limit reached; not replying", { phone });
      } else {
        const { messages } = await ctx.history(phone, { limit: CONTEXT_MESSAGES });
        const context: ContextTurn[] = messages
          .slice()
          .reverse()
          .map((m: MessageRecord) => ({ role: m.direction === "inbound" ? "user" : "assistant", content: m.message }));
        const { text } = await ctx.generate({ phone, context, instructions: INSTRUCTIONS });
        try {
          const sent = await ctx.reply({ id: last.id, phone }, text);
          if (!sent.replayed) recent.push(now);
        } catch (err) {
          if (!isOptedOut(err)) throw err;
          ctx.log.info("contact opted out while the reply was written; not replying", { phone });
        }
      }
      replies[phone] = recent;
      delete waiting[phone];
      // Saved after each contact, so a failure later in the run does not answer this one twice.
      await ctx.state.set("waiting", waiting);
      await ctx.state.set("replies", replies);
    }
    await ctx.state.set("waiting", waiting);
  },
});
