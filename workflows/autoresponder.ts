import { defineWorkflow, historyContext, isSkipped, isUnsupported, optOutAction, parseReactionText, type WorkflowContext } from "../src/workflow";

/** Wait until a contact has been quiet this long, so a burst of texts gets one reply. */
const QUIET_MS = 5_000;
/** The longest a contact's typing holds the reply back after its last text, so an indicator the network never stops cannot hold it forever. */
const TYPING_WAIT_MS = 30_000;
/** At most this many replies to one contact an hour, so two bots cannot loop. */
const MAX_REPLIES_PER_HOUR = 3;
/** How much of the conversation the generator sees. */
const CONTEXT_MESSAGES = 20;
/** In one group chat, at least this long between two of its replies, so a busy group is not flooded. */
const GROUP_REPLY_INTERVAL_MS = 60_000;
const INSTRUCTIONS =
  "You are the automatic assistant of this number. Answer briefly and kindly; if you cannot help, say a person will reply soon.";
const GROUP_INSTRUCTIONS =
  "You are the automatic assistant of this number, in a group chat; each of the others' messages starts with its sender's number. " +
  "Answer the latest message that names you, briefly and kindly, to the whole group; if you cannot help, say a person will reply soon.";

interface Waiting {
  /** The latest inbound message of the burst: the one the reply answers. */
  id: string;
  at: number;
}

/** A group's latest mention waiting for its reply: who wrote it (their number sets the reply's language hints). */
interface GroupWaiting extends Waiting {
  phone: string;
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
  // In a group, only the messages that name us (MENTION_PATTERNS) reach the workflow.
  groups: "mentions",
  async run(ctx) {
    const waiting = (await ctx.state.get<Record<string, Waiting>>("waiting")) ?? {};
    const replies = (await ctx.state.get<Record<string, number[]>>("replies")) ?? {};
    const groupWaiting = (await ctx.state.get<Record<string, GroupWaiting>>("groupWaiting")) ?? {};
    const groupReplied = (await ctx.state.get<Record<string, number>>("groupReplied")) ?? {};
    const showTyping = ctx.network.capabilities.typing;

    for (const msg of await ctx.poll()) {
      const at = Date.parse(msg.timestamp);
      // STOP, START and the other keywords are Textwire's to act on, not a conversation to answer.
      if (optOutAction(msg.message)) {
        if (msg.group) delete groupWaiting[msg.chat_id];
        else delete waiting[msg.phone];
      }
      // An iPhone's reaction sent as SMS (`Loved “…”`) is not a text to answer, whatever it quotes.
      else if (parseReactionText(msg.message)) continue;
      else if (msg.group) groupWaiting[msg.chat_id] = { id: msg.id, at, phone: msg.phone };
      else waiting[msg.phone] = { id: msg.id, at };
    }

    const now = Date.now();
    for (const [phone, last] of Object.entries(waiting)) {
      const quietFor = now - last.at;
      if (quietFor < QUIET_MS) continue; // still texting: answer the whole burst later
      if (quietFor < TYPING_WAIT_MS && (await ctx.isTyping(phone))) continue; // still typing: the same
      const recent = (replies[phone] ?? []).filter((t) => now - t < 3_600_000);
      // A contact that opted out (Textwire keeps the state) gets no reply, and nothing is
      // generated for it. A STOP arriving meanwhile skips the reply.
      if (await ctx.optedOut(phone)) {
        ctx.log.info("contact opted out; not replying", { phone });
      } else if (recent.length >= MAX_REPLIES_PER_HOUR) {
        ctx.log.warn("reply limit reached; not replying", { phone });
      } else {
        // Taken up: read, so the conversation shows unread only for what a person should see.
        await courtesy(ctx, "marking read", phone, () => ctx.markRead(phone));
        const { messages } = await ctx.history(phone, { limit: CONTEXT_MESSAGES });
        const context = historyContext(messages);
        if (showTyping) await courtesy(ctx, "typing", phone, () => ctx.typing(phone, true));
        let sent = false;
        try {
          const { text } = await ctx.generate({ phone, context, instructions: INSTRUCTIONS });
          // In a supervised chat the reply is a draft a person approves; refused by policy (a STOP
          // meanwhile, a person who took the chat over) it is skipped: nothing to count.
          const reply = await ctx.reply({ id: last.id, phone }, text);
          if (isSkipped(reply)) ctx.log.info(`reply skipped: ${reply.skipped}`, { phone });
          else if (!reply.replayed) {
            recent.push(now);
            sent = !reply.drafted;
          }
        } finally {
          // A reply sent now stopped the typing; a failure, a draft, a skip or a reply sent before did not.
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
    await answerGroups(ctx, groupWaiting, groupReplied, now);
  },
});

/**
 * Groups: the latest mention of each, once the group has been quiet for QUIET_MS and at least
 * GROUP_REPLY_INTERVAL_MS after our last reply there, answered in the group with its recent
 * messages (senders named) as context. A group muted by a STOP gets nothing.
 */
async function answerGroups(ctx: WorkflowContext, waiting: Record<string, GroupWaiting>, replied: Record<string, number>, now: number): Promise<void> {
  // A reply older than the interval holds nothing back: forgotten, so the state stays small.
  for (const [chatId, at] of Object.entries(replied)) if (now - at >= GROUP_REPLY_INTERVAL_MS) delete replied[chatId];
  for (const [chatId, last] of Object.entries(waiting)) {
    if (now - last.at < QUIET_MS) continue;
    if (now - (replied[chatId] ?? 0) < GROUP_REPLY_INTERVAL_MS) continue; // answered lately: the latest mention waits its turn
    if (await ctx.muted(chatId)) {
      ctx.log.info("group muted by a STOP; not replying", { chat_id: chatId });
    } else {
      const { messages } = await ctx.chatHistory(chatId, { limit: CONTEXT_MESSAGES });
      const { text } = await ctx.generate({ phone: last.phone, context: historyContext(messages, { senders: true }), instructions: GROUP_INSTRUCTIONS });
      const reply = await ctx.reply({ id: last.id, phone: last.phone, chat_id: chatId }, text);
      if (isSkipped(reply)) ctx.log.info(`group reply skipped: ${reply.skipped}`, { chat_id: chatId });
      else if (!reply.replayed) replied[chatId] = now;
    }
    delete waiting[chatId];
    // Saved after each group, so a failure later in the run does not answer this one twice.
    await ctx.state.set("groupWaiting", waiting);
    await ctx.state.set("groupReplied", replied);
  }
  await ctx.state.set("groupWaiting", waiting);
  await ctx.state.set("groupReplied", replied);
}
