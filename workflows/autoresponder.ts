import { defineWorkflow, type ContextTurn, type MessageRecord } from "../src/workflow";

/** Wait until a contact has been quiet this long, so a burst of texts gets one reply. */
const QUIET_MS = 5_000;
/** At most this many replies to one contact an hour, so two bots cannot loop. */
const MAX_REPLIES_PER_HOUR = 3;
/** How much of the conversation the generator sees. */
const CONTEXT_MESSAGES = 20;
const INSTRUCTIONS =
  "You are the automatic assistant of this number. Answer briefly and kindly; if you cannot help, say a person will reply soon.";

/** Messages that only say one of these opt out (carriers' standard words); START opts back in. */
const OPT_OUT = new Set(["stop", "stopall", "unsubscribe", "cancel", "end", "quit", "optout", "opt out", "revoke"]);
const OPT_IN = new Set(["start", "unstop", "yes"]);
const keyword = (text: string) => text.trim().toLowerCase().replace(/[.!]+$/, "");

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
    const optedOut = (await ctx.state.get<Record<string, true>>("optedOut")) ?? {};
    const replies = (await ctx.state.get<Record<string, number[]>>("replies")) ?? {};

    for (const msg of await ctx.poll()) {
      const word = keyword(msg.message);
      if (OPT_OUT.has(word)) {
        optedOut[msg.phone] = true;
        delete waiting[msg.phone];
      } else if (OPT_IN.has(word) && optedOut[msg.phone]) {
        delete optedOut[msg.phone];
      } else if (!optedOut[msg.phone]) {
        waiting[msg.phone] = { id: msg.id, at: Date.parse(msg.timestamp) };
      }
    }

    const now = Date.now();
    for (const [phone, last] of Object.entries(waiting)) {
      if (now - last.at < QUIET_MS) continue; // still typing: answer the whole burst later
      const recent = (replies[phone] ?? []).filter((t) => now - t < 3_600_000);
      if (recent.length >= MAX_REPLIES_PER_HOUR) {
        ctx.log.warn("reply limit reached; not replying", { phone });
      } else {
        const { messages } = await ctx.history(phone, { limit: CONTEXT_MESSAGES });
        const context: ContextTurn[] = messages
          .slice()
          .reverse()
          .map((m: MessageRecord) => ({ role: m.direction === "inbound" ? "user" : "assistant", content: m.message }));
        const { text } = await ctx.generate({ phone, context, instructions: INSTRUCTIONS });
        const sent = await ctx.reply({ id: last.id, phone }, text);
        if (!sent.replayed) recent.push(now);
      }
      replies[phone] = recent;
      delete waiting[phone];
      // Saved after each contact, so a failure later in the run does not answer this one twice.
      await ctx.state.set("waiting", waiting);
      await ctx.state.set("replies", replies);
    }
    await ctx.state.set("waiting", waiting);
    await ctx.state.set("optedOut", optedOut);
  },
});
