/** What a driver reports after the network took a message. */
export interface SendResult {
  /** The network's own id for the message, when it has one. */
  networkId?: string;
  status: "sent" | "delivered";
}

/**
 * One messaging network. `send` throws when the network refuses or fails; the message is
 * then recorded as failed. Inbound messages and status reports arrive at the network's
 * webhook (`POST /webhooks/<name>`).
 */
export interface NetworkDriver {
  readonly name: string;
  send(message: { id: string; phone: string; text: string }): Promise<SendResult>;
}
