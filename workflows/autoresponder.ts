import {
  defineWorkflow,
  isOptedOut,
  isUnsupported,
  optOutAction,
  parseReactionText,
  type ContextTurn,
  type MessageRecord,
  type WorkflowContext,
} from "../src/workflow";

/** Wait until a contact has been quiet this long, so a burst of texts gets one reply. */
const QUIET_MS = 5_000;
/** The longest a contact's typing holds the reply back after its last text, so an indicator the network never stops cannot hold it forever. */
const TYPING_WAIT_MS = 30_000;
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

/**
 * Read marks and typing are courtesies: one the network cannot do now (422, e.g. BlueBubbles
 * stops typing only with a send) or that fails never stops the reply; typing left on stops
 * by itself within 60 s.
 */
async function courtesy(ctx: WorkflowContext, what: string, phone: string, call: () => Promise<void>): Promise<void> {
  try {
    await call();
  } catch (err) {
    ctx.log[isUnsupported(err) ? "info" : "warn"](`${what} skipped`, { phone, error: err instanceof Error ? err.message : String(err) });
  }
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
    const showTyping = ctx.network.capabilities.typing;

    for (const msg of await ctx.poll()) {
      // STOP, START and the other keywords are Textwire's to act on, not a conversation to answer.
      if (optOutAction(msg.message)) delete waiting[msg.phone];
      // An iPhone's reaction sent as SMS (`Loved “…”`) is not a text to answer, whatever it quotes.
      else if (!parseReactionText(msg.message)) waiting[msg.phone] = { id: msg.id, at: Date.parse(msg.timestamp) };
    }

    const now = Date.now();
    for (const [phone, last] of Object.entries(waiting)) {
      const quietFor = now - last.at;
      if (quietFor < QUIET_MS) continue; // still texting: answer the whole burst later
      if (quietFor < TYPING_WAIT_MS && (await ctx.isTyping(phone))) continue; // still typing: the same
      const recent = (replies[phone] ?? []).filter((t) => now - t < 3_600_000);
      // A contact that opted out (Textwire keeps the state) gets no reply, and nothing is
      // generated for it. A STOP arriving meanwhile makes the reply FORBIDDEN: skipped too.
      if (await ctx.optedOut(phone)) {
        ctx.log.info("contact opted out; not replying", { phone });
      } else if (recent.length >= MAX_REPLIES_PER_HOUR) {
        ctx.log.warn("reply limit reached; not replying", { phone });
      } else {
        // Taken up: read, so the conversation shows unread only for what a person should see.
        await courtesy(ctx, "marking read", phone, () => ctx.markRead(phone));
        const { messages } = await ctx.history(phone, { limit: CONTEXT_MESSAGES });
        const context: ContextTurn[] = messages
          .slice()
          .reverse()
          .map((m: MessageRecord) => ({ role: m.direction === "inbound" ? "user" : "assistant", content: m.message }));
        if (showTyping) await courtesy(ctx, "typing", phone, () => ctx.typing(phone, true));
        let sent = false;
        try {
          const { text } = await ctx.generate({ phone, context, instructions: INSTRUCTIONS });
          const reply = await ctx.reply({ id: last.id, phone }, text);
          sent = !reply.replayed;
          if (sent) recent.push(now);
        } catch (err) {
          if (!isOptedOut(err)) throw err;
          ctx.log.info("contact opted out while the reply was written; not replying", { phone });
        } finally {
          // A reply sent now stopped the typing; a failure, an opt-out or a reply sent before did not.
          if (showTyping && !sent) await courtesy(ctx, "stopping typing", phone, () => ctx.typing(phone, false));
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
