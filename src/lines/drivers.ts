import type { Config } from "../config";
import type { Storage } from "../db/port";
import type { LineRow } from "../db/lines";
import type { Logger } from "../log";
import { ANDROID_SEND_TIMEOUT_MS, createAndroidNetwork } from "../network/android";
import { createBlueBubblesNetwork } from "../network/bluebubbles";
import type { DriverState, NetworkDriver } from "../network/driver";
import { createLoopbackNetwork } from "../network/loopback";
import { createTwilioNetwork } from "../network/twilio";
import { AppError } from "../errors";
import type { LineNetwork } from "../vocabulary/lines";
import type { LineCredentials, LineSettings } from "./schemas";

/**
 * The driver of a line this process cannot build (its credentials do not open, or the
 * process lacks a setting the network needs, e.g. a CLI run without PUBLIC_URL): the line is
 * still listed, and anything asked of its network is refused naming why (422).
 */
export function unavailableDriver(network: string, reason: string): NetworkDriver {
  const refuse = async (): Promise<never> => {
    throw new AppError("UNPROCESSABLE_CONTENT", `line: ${reason}`);
  };
  return {
    name: network,
    capabilities: { reactions: false, typing: false, read_receipts: false, edit: false, unsend: false, groups: false, media: false, threads: false },
    send: refuse,
    check: async () => ({ ok: false, detail: reason }),
  };
}

/** What building a driver needs besides its line. */
export interface DriverContext {
  config: Config;
  log: Logger;
  storage: Pick<Storage, "networkState">;
}

/**
 * Where a line's driver keeps its small state (BlueBubbles' chat guids and catch-up cursor):
 * the environment's line under its network's name, as before lines, so an upgrade keeps it;
 * any other line under its id.
 */
export const stateKeyOf = (line: Pick<LineRow, "id" | "network" | "managed">) => (line.managed === "env" ? line.network : line.id);

/** A line's webhook path: `/webhooks/<network>` for the environment's line (as before lines), `/webhooks/lines/<id>` for the others. */
export const webhookPathOf = (line: Pick<LineRow, "id" | "network" | "managed">) =>
  line.managed === "env" ? `/webhooks/${line.network}` : `/webhooks/lines/${line.id}`;

function stateOf(storage: DriverContext["storage"], key: string): DriverState {
  return { get: (k) => storage.networkState.get(key, k), set: (k, v) => storage.networkState.set(key, k, v) };
}

/** The environment's line as NETWORK and its variables declare it: its stored settings (non-secret) and its credentials (kept in memory only). */
export function envLine(config: Config): { network: LineNetwork; address: string | null; settings: LineSettings; credentials: LineCredentials } {
  switch (config.NETWORK) {
    case "loopback":
      return { network: "loopback", address: null, settings: {}, credentials: {} };
    case "twilio":
      return {
        network: "twilio",
        address: config.TWILIO_FROM!,
        settings: { account_sid: config.TWILIO_ACCOUNT_SID!, api_url: config.TWILIO_API_URL, send_timeout_ms: config.TWILIO_SEND_TIMEOUT_MS },
        credentials: { auth_token: config.TWILIO_AUTH_TOKEN! },
      };
    case "bluebubbles":
      return {
        network: "bluebubbles",
        address: null,
        settings: { url: config.BLUEBUBBLES_URL!, service: config.BLUEBUBBLES_SERVICE, send_timeout_ms: config.BLUEBUBBLES_SEND_TIMEOUT_MS },
        credentials: { password: config.BLUEBUBBLES_PASSWORD!, webhook_secret: config.WEBHOOK_SECRET! },
      };
  }
}

/** Why a line of `network` cannot work in this deployment, or undefined (checked on create and update: 422). */
export function deploymentProblem(network: LineNetwork, config: Pick<Config, "PUBLIC_URL">): string | undefined {
  if (network === "twilio" && !config.PUBLIC_URL) return "network: a twilio line needs PUBLIC_URL, where Twilio posts its webhooks";
  if (network === "android") {
    const url = config.PUBLIC_URL ? new URL(config.PUBLIC_URL) : undefined;
    if (!url || (url.protocol !== "https:" && url.hostname !== "127.0.0.1")) {
      return "network: an android line needs PUBLIC_URL to be https (the gateway posts webhooks only to https; docs/networks.md shows a TLS proxy)";
    }
  }
  return undefined;
}

/**
 * The one place drivers are built: a line's driver from its settings and its credentials
 * (opened), live for as long as the line is unchanged (src/lines/registry.ts rebuilds it).
 */
export function buildDriver(line: Pick<LineRow, "id" | "network" | "managed" | "address">, settings: LineSettings, credentials: LineCredentials, ctx: DriverContext): NetworkDriver {
  const { config, log } = ctx;
  const state = stateOf(ctx.storage, stateKeyOf(line));
  switch (line.network) {
    case "loopback":
      return createLoopbackNetwork();
    case "twilio":
      // Twilio posts its status callbacks there; a process without it (a CLI run) cannot send through a Twilio line.
      if (!config.PUBLIC_URL) throw new Error("PUBLIC_URL is not set, and Twilio needs it for the line's webhooks");
      return createTwilioNetwork({
        accountSid: String(settings.account_sid),
        authToken: credentials.auth_token!,
        from: line.address!,
        apiUrl: typeof settings.api_url === "string" ? settings.api_url : config.TWILIO_API_URL,
        publicUrl: config.PUBLIC_URL!,
        webhookPath: webhookPathOf(line),
        sendTimeoutMs: typeof settings.send_timeout_ms === "number" ? settings.send_timeout_ms : config.TWILIO_SEND_TIMEOUT_MS,
      });
    case "bluebubbles":
      return createBlueBubblesNetwork({
        url: String(settings.url),
        password: credentials.password!,
        webhookSecret: credentials.webhook_secret!,
        service: settings.service === "SMS" ? "SMS" : "iMessage",
        sendTimeoutMs: typeof settings.send_timeout_ms === "number" ? settings.send_timeout_ms : config.BLUEBUBBLES_SEND_TIMEOUT_MS,
        log: log.child({ line: line.id }),
        state,
      });
    case "android":
      return createAndroidNetwork({
        url: String(settings.url),
        username: String(settings.username),
        password: credentials.password!,
        signingKey: credentials.signing_key!,
        ...(typeof settings.device_id === "string" ? { deviceId: settings.device_id } : {}),
        ...(typeof settings.sim_number === "number" ? { simNumber: settings.sim_number } : {}),
        sendTimeoutMs: typeof settings.send_timeout_ms === "number" ? settings.send_timeout_ms : ANDROID_SEND_TIMEOUT_MS,
        webhookUrl: `${(config.PUBLIC_URL ?? "").replace(/\/+$/, "")}${webhookPathOf(line)}`,
        webhookIdPrefix: line.id,
        log: log.child({ line: line.id }),
      });
  }
}
