import type { MessageStatus } from "../vocabulary/message-status";
import type { MessageDirection } from "../vocabulary/messages";
import type { DeliveryState } from "../vocabulary/webhooks";
import type { RunStatus } from "../vocabulary/workflows";

/** How a generation ended, as metrics count it. */
export type GenerationResult = "ok" | "error";

/**
 * What the domain tells metrics, counted per process by src/observability/metrics.ts. The
 * domain holds it as an optional dependency (`metrics?`): absent when METRICS_TOKEN is
 * unset, and then nothing is counted.
 */
export interface Recorder {
  /** A message reached `status` in this process: stored, answered by the network, or moved by a report. */
  message(direction: MessageDirection, network: string, status: MessageStatus): void;
  /** A webhook attempt left its delivery in `state` (`pending`: it will be retried). */
  webhookAttempt(state: DeliveryState): void;
  /** A workflow run ended, after `seconds`. */
  workflowRun(workflow: string, result: RunStatus, seconds: number): void;
  /** A generation ended, after `seconds`. */
  generation(result: GenerationResult, seconds: number): void;
}
