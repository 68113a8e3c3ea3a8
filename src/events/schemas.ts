import { z } from "zod";
import { chatState } from "../messages/chat-schemas";
import { isoInstant, messageRecord, reactionRecord, wholeNumber } from "../messages/schemas";
import { lineRecord } from "../lines/schemas";
import { EVENT_TYPES } from "../vocabulary/events";
import { REROUTE_REASONS } from "../vocabulary/lines";
import { RUN_STATUSES, RUN_TRIGGERS } from "../vocabulary/workflows";

export const eventType = z.enum(EVENT_TYPES, { error: `must be one of ${EVENT_TYPES.join(", ")}` });

/** A time field of an answer. */
export const isoTime = (description: string) => z.string().meta({ description: `${description} ISO 8601, UTC, microseconds.`, example: "2026-11-21T09:30:00.123456Z" });

// The events as GET /api/events lists them (src/events/types.ts toEvent).
const eventFields = {
  id: z.string().meta({ description: "`evt_…`: the `webhook-id` of its deliveries.", example: "evt_5b1e0c9d8a7f4e3b2c1d0e9f8a7b6c5d" }),
  timestamp: isoTime("When the change happened; unique and strictly increasing (the cursor of GET /api/events)."),
};
/** A workflow run, as events and the console's workflows.runs show it (src/events/types.ts toRunRecord). */
export const runRecord = z
  .object({
    id: z.string(),
    workflow: z.string(),
    trigger: z.enum(RUN_TRIGGERS),
    dry_run: z.boolean(),
    status: z.enum(RUN_STATUSES),
    error: z.string().nullable(),
    handled: z.number().int().meta({ description: "Inbound messages the run polled." }),
    started_at: isoTime("When the run started."),
    ended_at: isoTime("When it ended.").nullable(),
  })
  .meta({ id: "WorkflowRun" });

/** The reaction a reaction event is about. */
const reactionChange = reactionRecord.omit({ timestamp: true }).meta({ id: "ReactionChange" });
/** A message event's data with the reaction it is about. */
const withReaction = (description: string) => messageRecord.extend({ reaction: reactionChange.meta({ description }) });

export const eventRecord = z
  .discriminatedUnion("type", [
    z
      .object({ ...eventFields, type: z.literal("message.received"), data: messageRecord })
      .meta({ id: "MessageReceivedEvent", description: "An inbound message was stored." }),
    z
      .object({
        ...eventFields,
        type: z.literal("message.status_updated"),
        data: messageRecord.extend({ previous_status: messageRecord.shape.status.meta({ description: "The status before this change." }) }),
      })
      .meta({ id: "MessageStatusUpdatedEvent", description: "An outbound message's status changed (a report that changed nothing writes no event)." }),
    z
      .object({ ...eventFields, type: z.literal("workflow.run_failed"), data: runRecord })
      .meta({ id: "WorkflowRunFailedEvent", description: "A workflow run (not a dry run) ended as error or timeout." }),
    z
      .object({ ...eventFields, type: z.literal("message.reaction_added"), data: withReaction("The reaction put on it.") })
      .meta({ id: "MessageReactionAddedEvent", description: "A reaction was put on a message, by the contact or by us (it replaces that person's previous one)." }),
    z
      .object({ ...eventFields, type: z.literal("message.reaction_removed"), data: withReaction("The reaction taken off.") })
      .meta({ id: "MessageReactionRemovedEvent", description: "A reaction was taken off a message." }),
    z
      .object({ ...eventFields, type: z.literal("message.read"), data: messageRecord })
      .meta({ id: "MessageReadEvent", description: "The contact read one of our messages (`read_at`); its status does not change." }),
    z
      .object({
        ...eventFields,
        type: z.literal("message.edited"),
        data: messageRecord.extend({ previous_message: z.string().meta({ description: "The text before this edit." }) }),
      })
      .meta({ id: "MessageEditedEvent", description: "A message was edited, by the contact or by us: `message` is the new text." }),
    z
      .object({ ...eventFields, type: z.literal("message.unsent"), data: messageRecord })
      .meta({ id: "MessageUnsentEvent", description: "A message was unsent, by the contact or by us: its `message` is now empty." }),
    z
      .object({
        ...eventFields,
        type: z.literal("contact.typing"),
        data: z.object({ phone: z.string(), typing: z.boolean().meta({ description: "true: started typing; false: stopped." }) }),
      })
      .meta({ id: "ContactTypingEvent", description: "The contact started or stopped typing (a start lapses after 60 s without a stop event). Stored as no message." }),
    z
      .object({ ...eventFields, type: z.literal("chat.updated"), data: chatState })
      .meta({ id: "ChatUpdatedEvent", description: "A group chat was renamed or its participants changed, through the API or by someone on the network: the chat as the change left it." }),
    z
      .object({
        ...eventFields,
        type: z.literal("message.rerouted"),
        data: messageRecord.extend({
          from_line: z.string().meta({ description: "The line routing chose, which could not reach the contact." }),
          to_line: z.string().meta({ description: "Its fallback, which the message went through (the record's `line_id`)." }),
          reason: z.enum(REROUTE_REASONS).meta({ description: "`not_on_imessage`: the phone has no iMessage; `unreachable`: the line's server refused the connection." }),
        }),
      })
      .meta({ id: "MessageReroutedEvent", description: "A send went through its line's fallback, once (docs/lines.md)." }),
    ...(
      [
        ["message.drafted", "MessageDraftedEvent", "An automated send was held as a draft (status `draft`) for a person to approve (docs/supervision.md); `by`: the key that sent it, null for a workflow."],
        ["message.approved", "MessageApprovedEvent", "A draft was approved: the same record leaves `draft` with the approved text and is sent; `by`: the approving key."],
        ["message.rejected", "MessageRejectedEvent", "A draft was rejected (`rejected`, final): it is never sent; `by`: the rejecting key."],
      ] as const
    ).map(([type, id, description]) =>
      z
        .object({ ...eventFields, type: z.literal(type), data: messageRecord.extend({ by: z.string().nullable().meta({ description: "The id of the key that acted; null for a workflow." }) }) })
        .meta({ id, description }),
    ),
    z
      .object({
        ...eventFields,
        type: z.literal("chat.mode_changed"),
        data: z.object({
          chat: chatState,
          from: chatState.shape.mode.meta({ description: "The mode before." }),
          to: chatState.shape.mode.meta({ description: "The mode now." }),
          by: z.string().nullable().meta({ description: "The id of the key that changed it (the console's too); null for a handoff keyword or the return after HANDOFF_MINUTES." }),
        }),
      })
      .meta({ id: "ChatModeChangedEvent", description: "A chat's mode changed (docs/supervision.md): by hand, by a person's handoff, by a contact's handoff keyword, or back after HANDOFF_MINUTES." }),
    z
      .object({
        ...eventFields,
        type: z.literal("chat.handoff_requested"),
        data: z.object({
          chat: chatState,
          message_id: z.string().meta({ description: "The inbound message that asked." }),
          phone: z.string().meta({ description: "Who asked." }),
          by: z.null().meta({ description: "Always null: the contact asked." }),
        }),
      })
      .meta({ id: "ChatHandoffRequestedEvent", description: "A contact asked for a person (its whole text one of HANDOFF_KEYWORDS): the chat is `human` now; someone should answer." }),
    ...(["line.created", "line.updated", "line.deleted"] as const).map((type) =>
      z
        .object({ ...eventFields, type: z.literal(type), data: lineRecord.extend({ actor_key_id: z.string().nullable().meta({ description: "The id of the key that acted; null when the CLI did." }) }) })
        .meta({ id: `Line${type.slice(5, 6).toUpperCase()}${type.slice(6)}Event`, description: `A line was ${type.slice(5)} (its record as the change left it; credentials are never in it), with the key that did it.` }),
    ),
    z
      .object({
        ...eventFields,
        type: z.enum(["key.created", "key.revoked", "webhook_endpoint.created", "webhook_endpoint.updated", "webhook_endpoint.deleted"]),
        data: z
          .object({
            actor_key_id: z.string().nullable().meta({ description: "The id of the key that acted; null when the CLI did." }),
            api_key: z.record(z.string(), z.unknown()).optional().meta({ description: "key.*: the key's record (never the key)." }),
            endpoint: z.record(z.string(), z.unknown()).optional().meta({ description: "webhook_endpoint.*: the endpoint's record (never its secret)." }),
          }),
      })
      .meta({ id: "AdminEvent", description: "An admin action (a key created or revoked, a webhook endpoint added, changed or deleted), with the key that did it." }),
  ])
  .meta({ id: "Event" });

export const eventsInput = z.object({
  since: isoInstant
    .meta({
      description:
        "Exclusive: only events after this ISO 8601 date-time (without a zone it is UTC; read to the microsecond). Pass the timestamp of the last event you got. Omitted: from the oldest event kept.",
      example: "2026-11-21T09:30:00.123456Z",
    })
    .optional(),
  type: eventType.meta({ description: `Only events of this type: ${EVENT_TYPES.join(", ")}.` }).optional(),
  limit: wholeNumber(1, { default: 100, description: "Most events returned, default and maximum 100; more is clamped to 100." }),
});

export const eventsOutput = z.object({
  success: z.boolean(),
  events: z.array(eventRecord),
  count: z.number().int(),
  has_more: z.boolean().meta({ description: "More events follow: ask again with `since` = the last event's timestamp." }),
});
