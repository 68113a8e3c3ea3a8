import { useMutation } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import type { MessageRecord } from "../../messages/schemas";
import type { NetworkCapabilities } from "../../vocabulary/network";
import { REACTIONS } from "../../vocabulary/reactions";
import { ConfirmDialog } from "../components/confirm-dialog";
import { ErrorAlert } from "../components/error-alert";
import { Modal } from "../components/modal";
import { useRefreshMessages } from "../live";
import { useTRPC } from "../trpc";
import { preview } from "./preview";
import { REACTION_NAMES } from "./reactions";

type DialogProps = { message: MessageRecord; onClose: () => void };

/** A dialog's mutation callbacks: once the server took the change, the messages are refreshed and the dialog closes. */
function useCloseOnSuccess(onClose: () => void) {
  const refresh = useRefreshMessages();
  return {
    onSuccess: () => {
      refresh();
      onClose();
    },
  };
}

/** The six tapbacks, ours pressed, and "Remove my reaction" when we have one; each closes the dialog once the server took it. */
function ReactDialog({ message, onClose }: DialogProps) {
  const trpc = useTRPC();
  const done = useCloseOnSuccess(onClose);
  const react = useMutation(trpc.messages.react.mutationOptions(done));
  const unreact = useMutation(trpc.messages.unreact.mutationOptions(done));
  const busy = react.isPending || unreact.isPending;
  const ours = message.reactions.find((r) => r.direction === "outbound")?.reaction;
  return (
    <Modal title="React" onClose={onClose}>
      <p>“{preview(message)}”</p>
      <div className="reaction-choices">
        {REACTIONS.map((reaction) => (
          <button
            key={reaction}
            type="button"
            className="secondary outline"
            aria-pressed={reaction === ours}
            aria-busy={react.isPending && react.variables?.reaction === reaction}
            disabled={busy}
            onClick={() => react.mutate({ id: message.id, reaction })}
          >
            <span aria-hidden="true">{REACTION_NAMES[reaction].emoji}</span> {REACTION_NAMES[reaction].name}
          </button>
        ))}
      </div>
      {ours && (
        <button type="button" className="secondary" aria-busy={unreact.isPending} disabled={busy} onClick={() => unreact.mutate({ id: message.id })}>
          Remove my reaction
        </button>
      )}
      <ErrorAlert error={react.error ?? unreact.error} />
    </Modal>
  );
}

/** A field "Message" holding the text, and "Save" (Enter saves). */
function EditDialog({ message, onClose }: DialogProps) {
  const trpc = useTRPC();
  const edit = useMutation(trpc.messages.edit.mutationOptions(useCloseOnSuccess(onClose)));
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    if (!edit.isPending) edit.mutate({ id: message.id, message: String(new FormData(event.currentTarget).get("message")) });
  };
  return (
    <Modal title="Edit message" onClose={onClose}>
      <form onSubmit={submit}>
        <label>
          Message
          <input name="message" autoComplete="off" required defaultValue={message.message} />
        </label>
        <ErrorAlert error={edit.error} />
        <button type="submit" aria-busy={edit.isPending}>
          Save
        </button>
      </form>
    </Modal>
  );
}

function UnsendDialog({ message, onClose }: DialogProps) {
  const trpc = useTRPC();
  const unsend = useMutation(trpc.messages.unsend.mutationOptions(useCloseOnSuccess(onClose)));
  return (
    <ConfirmDialog
      title="Unsend message"
      confirmLabel="Unsend"
      busy={unsend.isPending}
      error={unsend.error}
      onConfirm={() => unsend.mutate({ id: message.id })}
      onClose={onClose}
    >
      <p>“{preview(message)}” is taken back from the contact's conversation too. This cannot be undone.</p>
    </ConfirmDialog>
  );
}

const DIALOGS = { React: ReactDialog, Edit: EditDialog, Unsend: UnsendDialog };
type Action = keyof typeof DIALOGS;

/**
 * What the operator may do with a message on the network, as the network can: react to
 * any; edit and unsend ours. The server judges the rest (its time windows: 409, shown in
 * the dialog). `describedBy` names the message each button acts on.
 */
export function MessageActions({ message, capabilities, describedBy }: { message: MessageRecord; capabilities: NetworkCapabilities; describedBy: string }) {
  const [open, setOpen] = useState<Action | null>(null);
  const onNetwork = message.unsent_at === null && (message.direction === "inbound" || message.status === "sent" || message.status === "delivered");
  const ours = message.direction === "outbound";
  const actions = (
    [
      ["React", capabilities.reactions],
      ["Edit", ours && capabilities.edit],
      ["Unsend", ours && capabilities.unsend],
    ] as const
  ).flatMap(([action, can]) => (can ? [action] : []));
  if (!onNetwork || actions.length === 0) return null;
  const Dialog = open && DIALOGS[open];
  return (
    <div className="message-actions">
      {actions.map((action) => (
        <button key={action} type="button" className="secondary outline compact" aria-describedby={describedBy} onClick={() => setOpen(action)}>
          {action}
        </button>
      ))}
      {Dialog && <Dialog message={message} onClose={() => setOpen(null)} />}
    </div>
  );
}
