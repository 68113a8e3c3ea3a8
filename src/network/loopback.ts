import type { NetworkDriver } from "./driver";

/**
 * The development network: every outbound message is delivered at once, and inbound
 * messages (and the contact's reactions, typing, reads, edits) arrive through
 * `POST /webhooks/loopback`. It can do everything a network can, but group chats.
 */
export function createLoopbackNetwork(): NetworkDriver {
  const done = async () => {};
  return {
    name: "loopback",
    capabilities: { reactions: true, typing: true, read_receipts: true, edit: true, unsend: true, groups: false, media: true, threads: true },
    async send(message) {
      return { networkId: `loopback:${message.id}`, status: "delivered" };
    },
    react: done,
    typing: done,
    markRead: done,
    edit: done,
    unsend: done,
  };
}
