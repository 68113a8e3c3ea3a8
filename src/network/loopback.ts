import type { NetworkDriver } from "./driver";

/**
 * The development network: every outbound message is delivered at once, and inbound
 * messages arrive through `POST /webhooks/loopback`.
 */
export function createLoopbackNetwork(): NetworkDriver {
  return {
    name: "loopback",
    async send(message) {
      return { networkId: `loopback:${message.id}`, status: "delivered" };
    },
  };
}
