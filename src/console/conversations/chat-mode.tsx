import { useMutation, useQuery } from "@tanstack/react-query";
import { useId } from "react";
import type { ChatMode } from "../../vocabulary/chat-modes";
import { ErrorAlert } from "../components/error-alert";
import { LocalTime } from "../components/local-time";
import { useRefreshMessages } from "../live";
import { useTRPC } from "../trpc";
import { useMay } from "../use-scopes";

const MODES: { mode: ChatMode; label: string }[] = [
  { mode: "auto", label: "Auto: automations reply" },
  { mode: "supervised", label: "Supervised: automated replies wait for approval" },
  { mode: "human", label: "Human: a person replies, automations stay silent" },
];

/**
 * A conversation's mode (docs/supervision.md) and its switch; while a person owns it, the
 * banner "Automated replies paused" with "Hand back" (to the mode before). Nothing for a
 * direct chat with no message yet (it has no chat).
 */
export function ChatModeControl({ chatId }: { chatId: string }) {
  const trpc = useTRPC();
  const may = useMay();
  const refresh = useRefreshMessages();
  const selectId = useId();
  const chat = useQuery({ ...trpc.chats.get.queryOptions({ id: chatId }), retry: false });
  const update = useMutation(trpc.chats.update.mutationOptions({ onSuccess: refresh }));
  const current = chat.data?.chat;
  if (!current) return null;
  const mayChange = may("messages:send");
  const setMode = (mode: ChatMode) => update.mutate({ id: chatId, mode });
  return (
    <div className="chat-mode">
      <div role="status">
        {current.mode === "human" && (
          <article className="paused">
            <strong>Automated replies paused: a person replied</strong>
            {current.human_until && (
              <small>
                {" "}
                Back to {current.previous_mode ?? "auto"} at <LocalTime value={current.human_until} /> unless someone replies again.
              </small>
            )}{" "}
            {mayChange && (
              <button type="button" className="secondary compact" aria-busy={update.isPending} onClick={() => setMode(current.previous_mode ?? "auto")}>
                Hand back
              </button>
            )}
          </article>
        )}
      </div>
      <label htmlFor={selectId}>Mode</label>
      <select id={selectId} value={current.mode} disabled={!mayChange || update.isPending} onChange={(event) => setMode(event.target.value as ChatMode)}>
        {MODES.map(({ mode, label }) => (
          <option key={mode} value={mode}>
            {label}
          </option>
        ))}
      </select>
      <ErrorAlert error={update.error} />
    </div>
  );
}
