import { AppError } from "../errors";
import type { OptOutType, PendingMessage } from "../vocabulary/messages";
import type { NetworkCapabilities } from "../vocabulary/network";
import type { Reaction } from "../vocabulary/reactions";
/** What a driver reports after the network took a message. */
export interface SendResult {
  /** The network's own id for the message, when it has one. */
  networkId?: string;
  status: "sent" | "delivered";
}

/** A file of an inbound message, for Textwire to download and keep. */
export interface InboundMedia {
  url: string;
  /** Sent with the download (Twilio's Basic auth), to the URL's own origin only. */
  headers?: Record<string, string>;
  /** The network's word for its type, used when the download does not say. */
  contentType?: string;
  /** The URL is the network's own server as configured (BLUEBUBBLES_URL): private addresses allowed. */
  trusted?: boolean;
}

/** A file of an outbound message, as a driver sends it. */
export interface OutboundMedia {
  id: string;
  contentType: string;
  size: number;
  /** The bytes, read from the media store (for networks that take uploads). */
  bytes(): Promise<Uint8Array>;
  /** A URL the network can fetch the file from: a signed Textwire URL (for networks that fetch). */
  url(): Promise<string>;
}

/** A group chat as the network knows it: its own id of it, its name and its other participants (E.164). */
export interface GroupInfo {
  networkId: string;
  name: string | null;
  participants: string[];
}

/** A message the network delivered to us. */
export interface InboundEvent {
  /** The contact; in a group, the sender. */
  phone: string;
  /** In a group chat: the chat. */
  chat?: GroupInfo;
  /** Empty when only media came. */
  message: string;
  media?: InboundMedia[];
  /** The network's own id: the same id twice is stored once. */
  networkId: string;
  /** Set when the network itself classed the message as an opt-out, opt-in or help keyword. */
  optOutType?: OptOutType;
  /** The network's id of the message this one answers (a threaded reply), when it says. */
  replyToNetworkId?: string;
}

/** A delivery report about one of our outbound messages. */
export interface StatusEvent {
  /** The network's id of the message, or our own id when the network echoes it back. */
  networkId?: string;
  messageId?: string;
  /** The network's own word for the status, kept with the report. */
  networkStatus: string;
  status: "sent" | "delivered" | "failed";
  /** When the network says it happened (ms since the epoch). */
  at?: number;
  error?: string;
}

/** A reaction of the contact's (a tapback) on a message of the conversation, or its removal. */
export interface ReactionEvent {
  phone: string;
  /** In a group chat: the network's id of the chat (`phone` is who reacted). */
  chat?: string;
  /** The network's id of the message reacted to (ours or theirs). */
  targetNetworkId: string;
  reaction: Reaction;
  remove: boolean;
  /** When the network says it happened (ms since the epoch). */
  at?: number;
}

/** The contact started (`typing`) or stopped typing. */
export interface TypingEvent {
  phone: string;
  typing: boolean;
}

/** The contact read one of our messages (and those before it). */
export interface ReadEvent {
  networkId: string;
  /** ms since the epoch. */
  at: number;
}

/** The contact edited or unsent one of their messages. */
export interface EditEvent {
  networkId: string;
  phone: string;
  kind: "edit" | "unsend";
  /** The new text, for an edit. */
  message?: string;
  /** ms since the epoch: applied once per time. */
  at: number;
}

/** What a network reported; every list may be empty. `chats`: group chats as they are after a change (renamed, participants), on networks with groups. */
export interface WebhookEvents {
  inbound: InboundEvent[];
  statuses: StatusEvent[];
  reactions: ReactionEvent[];
  typing: TypingEvent[];
  reads: ReadEvent[];
  edits: EditEvent[];
  chats?: GroupInfo[];
}

/** Reports of nothing but these inbound messages and statuses. */
export const webhookEvents = (inbound: InboundEvent[], statuses: StatusEvent[]): WebhookEvents => ({ inbound, statuses, reactions: [], typing: [], reads: [], edits: [] });

/** A conversation: the contact's phone, or in a group chat the network's id of the chat (`phone` is then ''). */
export interface Conversation {
  phone: string;
  chat?: string;
}

/** A message on the network: its network id and its conversation. */
export interface MessageTarget extends Conversation {
  networkId: string;
}

/**
 * Thrown by `send` when the outcome is unknown: the request went out but no answer came
 * in time, or the connection broke after it was sent. The network may still deliver the
 * message, so it is not failed: its record stays `queued` until a report or a
 * reconciliation settles it (docs/networks.md).
 */
export class SendOutcomeUnknown extends Error {
  override name = "SendOutcomeUnknown";
}

/**
 * What a failed send request means: a refused connection surely sent nothing (502); a
 * timeout or a connection cut after the request went out may have sent it (unknown).
 */
export function sendRequestFailure(network: string, err: unknown): Error {
  const code = (err as { code?: string }).code ?? "";
  if (code === "ECONNREFUSED" || code === "ConnectionRefused" || code === "FailedToOpenSocket") {
    return new NetworkUnreachable(`${network}: unreachable (the connection was refused)`);
  }
  return new SendOutcomeUnknown(`${network}: no answer to the send (${(err as Error).name})`);
}

/** A send whose connection the network's server refused: surely not sent (502), so a line's fallback may take it (docs/lines.md). */
export class NetworkUnreachable extends AppError {
  override name = "NetworkUnreachable";
  constructor(message: string) {
    super("BAD_GATEWAY", message);
  }
}

/**
 * Thrown by `send` when the network refused because the recipient unsubscribed from us
 * (Twilio's error 21610 after a STOP): the message is failed and the contact opted out.
 */
export class RecipientOptedOut extends Error {
  override name = "RecipientOptedOut";
}

/** A small store of the driver's own state (kept in the database, per network). */
export interface DriverState {
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string): Promise<void>;
}

/** What a driver sends: to `phone`, or into the group chat `chat` (the network's id of it; `phone` is then ''). */
export interface OutboundMessage {
  id: string;
  phone: string;
  chat?: string;
  text: string;
  media?: OutboundMedia[];
  replyTo?: string;
}

/**
 * One messaging network. `send` throws when the network refuses or fails: an AppError
 * keeps its code (an invalid recipient is BAD_REQUEST, the network's rate limit
 * TOO_MANY_REQUESTS), anything else is BAD_GATEWAY; the message is then recorded as failed.
 * It throws SendOutcomeUnknown when the message may have gone out (then it stays queued).
 */
export interface NetworkDriver {
  readonly name: string;
  /** What it can do (GET /api/network); the optional methods below are present exactly when their capability is. */
  readonly capabilities: NetworkCapabilities;
  /** `text` may be empty when `media` is not. `replyTo`: the network's id of the message this one answers; networks that thread send it so, the others ignore it. */
  send(message: OutboundMessage): Promise<SendResult>;
  /**
   * Reads a request to `POST /webhooks/<name>[/<subpath>]`: verifies it (throws UNAUTHORIZED
   * when it is not from the network) and turns it into events, with the answer the network
   * expects. Absent on networks whose inbound messages arrive otherwise (loopback's webhook
   * is an API route).
   */
  webhook?(req: { url: URL; subpath: string; headers: Headers; body: string }): Promise<WebhookEvents & { response: Response }>;
  /** Asks the network for what its webhooks may have missed since `cursor`; returns the new cursor. */
  catchUp?(cursor: string | undefined): Promise<WebhookEvents & { cursor: string | undefined }>;
  /**
   * Asks the network about outbound messages still not final (a bounded batch): reports for
   * the ones it knows, applied as any report is. Networks with `reconcile` settle their own
   * unknown outcomes, so their `queued` messages are not failed by the stale sweep.
   */
  reconcile?(pending: PendingMessage[]): Promise<StatusEvent[]>;
  /**
   * Sends or (`remove`) takes away our reaction on a message. These five throw as `send`
   * does: an AppError keeps its code (422 when the network cannot do it now), anything else
   * is BAD_GATEWAY naming the network.
   */
  react?(target: MessageTarget, reaction: Reaction, remove: boolean): Promise<void>;
  /** Starts or stops our typing indicator in the conversation (`chat`: the group, the network's id of it; `phone` is then ''). */
  typing?(phone: string, on: boolean, chat?: string): Promise<void>;
  /** Tells the contact (or the group `chat`) we read the conversation. */
  markRead?(phone: string, chat?: string): Promise<void>;
  /** Edits one of our messages. */
  edit?(target: MessageTarget, text: string): Promise<void>;
  /** Unsends one of our messages. */
  unsend?(target: MessageTarget): Promise<void>;
  /**
   * Group chats (capability `groups`; these three are present exactly when it is, and throw as
   * `react` does). `createGroup` makes a group by sending its first message (`id` and `text` as
   * `send` takes them) and returns the send's result with the new chat; a name is given after
   * (`renameGroup`), once Textwire knows the chat by its network id.
   */
  createGroup?(group: { id: string; participants: string[]; text: string }): Promise<SendResult & { chat: GroupInfo }>;
  /** Renames the group `chat` (the network's id of it). */
  renameGroup?(chat: string, name: string): Promise<void>;
  /** Adds (`add`) or removes a participant of the group `chat`. */
  setParticipant?(chat: string, phone: string, add: boolean): Promise<void>;
  /** A line's test (POST /api/lines/:id/test): one authenticated call that proves its settings and credentials, sending nothing. Never throws. */
  check?(): Promise<LineCheck>;
  /** iMessage lines: whether the phone has iMessage; undefined when the server cannot say (routing then counts it unknown). */
  imessageAvailable?(phone: string): Promise<boolean | undefined>;
  /** Called when the line is created, changed or tested (a network whose webhooks are registered through its API). */
  register?(): Promise<void>;
  /** Called when the line is deleted. */
  unregister?(): Promise<void>;
}

/** What a line's test found: `ok` false with what failed in `detail`. */
export interface LineCheck {
  ok: boolean;
  detail: string;
}

/** A check's answer when the network's server could not be reached or answered oddly. */
export function checkFailure(network: string, err: unknown): LineCheck {
  return { ok: false, detail: `${network}: ${err instanceof AppError ? err.message : `unreachable (${(err as Error).name}: ${(err as Error).message})`}` };
}
