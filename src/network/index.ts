import type { Config } from "../config";
import type { NetworkDriver } from "./driver";
import { createLoopbackNetwork } from "./loopback";

export type { NetworkDriver, SendResult } from "./driver";

/** The driver that `NETWORK` names. */
export function createNetwork(config: Pick<Config, "NETWORK">): NetworkDriver {
  switch (config.NETWORK) {
    case "loopback":
      return createLoopbackNetwork();
  }
}
