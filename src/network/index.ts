import type { Config } from "../config";
import { createBlueBubblesNetwork } from "./bluebubbles";
import type { Logger } from "../log";
import type { DriverState, NetworkDriver } from "./driver";
import { createLoopbackNetwork } from "./loopback";
import { createTwilioNetwork } from "./twilio";

export type { NetworkDriver, SendResult } from "./driver";

/** The driver that `NETWORK` names; loadConfig has checked its settings. */
export function createNetwork(config: Config, extras: { log?: Logger; state?: DriverState } = {}): NetworkDriver {
  switch (config.NETWORK) {
    case "loopback":
      return createLoopbackNetwork();
    case "twilio":
      return createTwilioNetwork({
        accountSid: config.TWILIO_ACCOUNT_SID!,
        authToken: config.TWILIO_AUTH_TOKEN!,
        from: config.TWILIO_FROM!,
        apiUrl: config.TWILIO_API_URL,
        publicUrl: config.PUBLIC_URL!,
        sendTimeoutMs: config.TWILIO_SEND_TIMEOUT_MS,
      });
    case "bluebubbles":
      return createBlueBubblesNetwork({
        url: config.BLUEBUBBLES_URL!,
        password: config.BLUEBUBBLES_PASSWORD!,
        webhookSecret: config.WEBHOOK_SECRET!,
        service: config.BLUEBUBBLES_SERVICE,
        sendTimeoutMs: config.BLUEBUBBLES_SEND_TIMEOUT_MS,
        ...extras,
      });
  }
}
