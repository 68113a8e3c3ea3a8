/** What a driver reports after the network took a message. */
export interface SendResult {
  /** The network's own id for the message, when it has one. */
  networkId?: string;
  status: "sent" | "delivered";
}

/** A message the network delivered to us. */
export interface InboundEvent {
  phone: string;
  message: string;
  /** The network's own id: the same id twice is stored once. */
  networkId: string;
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

export interface WebhookEvents {
  inbound: InboundEvent[];
  statuses: StatusEvent[];
}

/**
 * One messaging network. `send` throws when the network refuses or fails: an AppError
 * keeps its code (an invalid recipient is BAD_REQUEST, the network's rate limit
 * TOO_MANY_REQUESTS), anything else is BAD_GATEWAY; the message is then recorded as failed.
 */
export interface NetworkDriver {
  readonly name: string;
  send(message: { id: string; phone: string; text: string }): Promise<SendResult>;
  /**
   * Reads a request to `POST /webhooks/<name>[/<subpath>]`: verifies it (throws UNAUTHORIZED
   * when it is not from the network) and turns it into events, with the answer the network
   * expects. Absent on networks whose inbound messages arrive otherwise (loopback's webhook
   * is an API route).
   */
  webhook?(req: { url: URL; subpath: string; headers: Headers; body: string }): Promise<WebhookEvents & { response: Response }>;
  /** Asks the network for what its webhooks may have missed since `cursor`; returns the new cursor. */
  catchUp?(cursor: string | undefined): Promise<WebhookEvents & { cursor: string | undefined }>;
}
