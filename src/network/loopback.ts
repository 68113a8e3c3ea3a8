import type { NetworkDriver } from "./driver";

/**
 * The development network: every outbound message is delivered at once, and inbound
 * messages (and the contact's reactions, typing, reads, edits) arrive through
 * `POST /webhooks/loopback` (group messages and changes too). It can do everything a network can.
 */
export function createLoopbackNetwork(): NetworkDriver {
  const done = async () => {};
  return {
    name: "loopback",
    capabilities: { reactions: true, typing: true, read_receipts: true, edit: true, unsend: true, groups: true, media: true, threads: true },
    async send(message) {
      return { networkId: `loopback:${message.id}`, status: "delivered" };
    },
    async createGroup(group) {
      return { networkId: `loopback:${group.id}`, status: "delivered", chat: { networkId: `loopback:chat:${group.id}`, name: null, participants: group.participants } };
    },
    renameGroup: done,
    setParticipant: done,
    react: done,
    typing: done,
    markRead: done,
    edit: done,
    unsend: done,
    async check() {
      return { ok: true, detail: "loopback: delivers every message at once" };
    },
  };
}
